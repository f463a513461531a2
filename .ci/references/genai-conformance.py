"""Google's own SDK (google-genai, pinned in requirements.txt) on the two
sides of promptlab's Gemini wire format (tests/it/genai_conformance.rs):

  genai-conformance.py request BASE_URL < CONVERSATION.json
      sends the conversation described on stdin (system instruction, tool
      declarations, contents with signed function calls and their
      responses, thinking, output limit, reply schema) with the SDK to the
      test server at BASE_URL, which records the request the SDK builds.

  genai-conformance.py read BASE_URL COUNT
      streams COUNT responses from the test server with the SDK and prints,
      one JSON line each, what the SDK read: answer text, function calls
      (name, args, id), every thought signature (standard base64), the last
      usage counts, the last finish reason, or the error it raised.

The API key is a fake one: the server is local and checks nothing.
"""

import base64
import json
import sys

from google import genai
from google.genai import types


def client(base_url):
    return genai.Client(
        api_key="conformance-fake-key",
        http_options=types.HttpOptions(base_url=base_url, api_version="v1beta"),
    )


def part(raw):
    signature = raw.get("thoughtSignature")
    signature = base64.b64decode(signature) if signature is not None else None
    if "text" in raw:
        return types.Part(text=raw["text"], thought_signature=signature)
    if "functionCall" in raw:
        call = raw["functionCall"]
        return types.Part(
            function_call=types.FunctionCall(
                name=call["name"], args=call.get("args"), id=call.get("id")
            ),
            thought_signature=signature,
        )
    if "functionResponse" in raw:
        response = raw["functionResponse"]
        return types.Part(
            function_response=types.FunctionResponse(
                name=response["name"], response=response["response"], id=response.get("id")
            )
        )
    raise ValueError(f"unknown part {raw!r}")


def config(conversation):
    thinking = conversation["thinking"]
    settings = {
        "system_instruction": conversation["system"],
        "max_output_tokens": conversation["maxOutputTokens"],
        "thinking_config": (
            types.ThinkingConfig(thinking_level=thinking["level"].upper())
            if "level" in thinking
            else types.ThinkingConfig(thinking_budget=thinking["budget"])
        ),
    }
    if conversation.get("tools"):
        settings["tools"] = [
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name=tool["name"],
                        description=tool["description"],
                        parameters_json_schema=tool["parameters"],
                    )
                    for tool in conversation["tools"]
                ]
            )
        ]
        settings["tool_config"] = types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(mode="AUTO")
        )
    if conversation.get("responseSchema") is not None:
        settings["response_mime_type"] = "application/json"
        settings["response_schema"] = conversation["responseSchema"]
    return types.GenerateContentConfig(**settings)


def send(base_url):
    conversation = json.load(sys.stdin)
    contents = [
        types.Content(role=content["role"], parts=[part(p) for p in content["parts"]])
        for content in conversation["contents"]
    ]
    sdk = client(base_url)  # kept: a dropped client closes its connection
    stream = sdk.models.generate_content_stream(
        model=conversation["model"], contents=contents, config=config(conversation)
    )
    for _ in stream:
        pass


def read_one(sdk):
    seen = {"text": "", "calls": [], "signatures": [], "usage": None,
            "finishReason": None, "error": None}
    try:
        for chunk in sdk.models.generate_content_stream(model="gemini-3-pro-preview", contents="q"):
            if chunk.usage_metadata is not None:
                usage = chunk.usage_metadata
                seen["usage"] = {
                    "prompt": usage.prompt_token_count or 0,
                    "candidates": usage.candidates_token_count or 0,
                    "thoughts": usage.thoughts_token_count or 0,
                    "cached": usage.cached_content_token_count or 0,
                }
            for candidate in (chunk.candidates or [])[:1]:
                if candidate.finish_reason is not None:
                    seen["finishReason"] = candidate.finish_reason.value
                for p in (candidate.content.parts if candidate.content else None) or []:
                    if p.thought_signature is not None:
                        seen["signatures"].append(base64.b64encode(p.thought_signature).decode())
                    if p.function_call is not None and p.function_call.name:
                        call = p.function_call
                        seen["calls"].append({"name": call.name, "args": call.args or {}, "id": call.id})
                    elif p.text is not None and not p.thought:
                        seen["text"] += p.text
    except Exception as error:  # the SDK's reading of a failed stream
        seen["error"] = f"{type(error).__name__}: {error}"
    return seen


def read(base_url, count):
    sdk = client(base_url)
    for _ in range(count):
        print(json.dumps(read_one(sdk)), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "request":
        send(sys.argv[2])
    elif sys.argv[1] == "read":
        read(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(f"unknown mode {sys.argv[1]!r}")
