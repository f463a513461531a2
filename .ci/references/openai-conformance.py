"""OpenAI's own SDK (openai, pinned in requirements.txt) on the two sides of
promptlab's Chat Completions wire format (tests/it/openai_conformance.rs):

  openai-conformance.py request BASE_URL < CONVERSATION.json
      sends the conversation described on stdin (system prompt, tool
      declarations, messages with an assistant turn's tool calls and their
      results, output cap, reasoning effort, a plain reply schema made
      strict by the SDK's own `to_strict_json_schema` rules) with the SDK
      to the test server at BASE_URL, which records the request it builds.

  openai-conformance.py read BASE_URL COUNT
      streams COUNT responses from the test server with the SDK's stream
      helper (`client.chat.completions.stream`, its own accumulator) and
      prints, one JSON line each, what it read: the answer text, the tool
      calls (id, name, arguments parsed), the usage counts, the finish
      reason, or the error it raised.

The API key is a fake one: the server is local and checks nothing.
"""

import copy
import json
import sys

import openai
from openai.lib._pydantic import _ensure_strict_json_schema


def client(base_url):
    return openai.OpenAI(api_key="conformance-fake-key", base_url=base_url, max_retries=0)


def tool(declaration):
    return {
        "type": "function",
        "function": {
            "name": declaration["name"],
            "description": declaration["description"],
            "parameters": declaration["parameters"],
        },
    }


def message(raw):
    """A message as an SDK user writes it, from the test's description."""
    if raw["role"] == "assistant":
        out = {"role": "assistant", "content": raw.get("content")}
        if raw.get("calls"):
            out["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
                }
                for call in raw["calls"]
            ]
        return out
    if raw["role"] == "tool":
        return {"role": "tool", "tool_call_id": raw["id"], "content": raw["content"]}
    return {"role": raw["role"], "content": raw["content"]}


def request(base_url):
    conversation = json.load(sys.stdin)
    options = {}
    if conversation.get("tools"):
        options["tools"] = [tool(t) for t in conversation["tools"]]
    if conversation.get("reasoningEffort"):
        options["reasoning_effort"] = conversation["reasoningEffort"]
    if conversation.get("responseSchema"):
        schema = copy.deepcopy(conversation["responseSchema"])
        options["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": "promptlab_reply",
                "schema": _ensure_strict_json_schema(schema, path=(), root=schema),
                "strict": True,
            },
        }
    messages = [{"role": "system", "content": conversation["system"]}]
    messages += [message(m) for m in conversation["messages"]]
    stream = client(base_url).chat.completions.create(
        model=conversation["model"],
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
        max_completion_tokens=conversation["maxCompletionTokens"],
        **options,
    )
    for _ in stream:
        pass


def usage_of(usage):
    if usage is None:
        return None
    prompt_details = usage.prompt_tokens_details
    completion_details = usage.completion_tokens_details
    return {
        "prompt": usage.prompt_tokens,
        # Not sent is not 0: promptlab records a count a server left out as
        # unknown (null), as the SDK reads it (None).
        "cached": prompt_details.cached_tokens if prompt_details else None,
        "completion": usage.completion_tokens,
        "reasoning": (completion_details.reasoning_tokens or 0) if completion_details else 0,
    }


def read_completion(completion):
    choice = completion.choices[0] if completion.choices else None
    calls = []
    if choice is not None and choice.message.tool_calls:
        for call in choice.message.tool_calls:
            calls.append(
                {
                    "id": call.id,
                    "name": call.function.name,
                    "args": json.loads(call.function.arguments or "{}"),
                }
            )
    return {
        "text": (choice.message.content or "") if choice else "",
        "calls": calls,
        "usage": usage_of(completion.usage),
        "finishReason": choice.finish_reason if choice else None,
        "error": None,
    }


def read(base_url, count):
    sdk = client(base_url)
    for _ in range(count):
        seen = {"text": "", "calls": [], "usage": None, "finishReason": None, "error": None}
        try:
            with sdk.chat.completions.stream(
                model="gpt-test",
                messages=[{"role": "user", "content": "What is the excess?"}],
                stream_options={"include_usage": True},
            ) as stream:
                for event in stream:
                    if event.type == "content.delta":
                        seen["text"] += event.delta
                seen = read_completion(stream.get_final_completion())
        except openai.LengthFinishReasonError as error:
            seen = read_completion(error.completion)
        except openai.APIError as error:
            seen["error"] = str(error)
        print(json.dumps(seen, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "request":
        request(sys.argv[2])
    elif sys.argv[1] == "read":
        read(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(f"unknown mode {sys.argv[1]!r}")
