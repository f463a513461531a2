//! The tool declarations sent with the system prompt, for `prompts show
//! --tools` and `--json`: what the model is told besides the prompt itself.

use std::io::{self, Write};

use promptlab::chat::request::PromptOptions;
use promptlab::sink::Style;
use promptlab::tools::{ToolDeclaration, all_tools};

/// The tools the model is offered for these options, as a chat turn offers them.
pub fn tool_declarations(options: &PromptOptions) -> Vec<ToolDeclaration> {
    all_tools(options.screen_actions)
        .iter()
        .map(|tool| tool.declaration())
        .collect()
}

/// `prompts show --tools`: each declaration as the model receives it.
pub fn write_tools(
    out: &mut impl Write,
    tools: &[ToolDeclaration],
    style: Style,
) -> io::Result<()> {
    let header = format!("── tools ({}) ── sent with the prompt", tools.len());
    writeln!(out, "\n{}", style.bold(&header))?;
    for tool in tools {
        let parameters = serde_json::to_string(&tool.parameters).map_err(io::Error::other)?;
        writeln!(out, "{}: {}", style.cyan(&tool.name), tool.description)?;
        writeln!(out, "  {}", style.dim(&parameters))?;
    }
    Ok(())
}
