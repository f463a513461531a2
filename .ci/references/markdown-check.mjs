// Renders a Markdown file as GitHub does (CommonMark with GFM tables and
// strikethrough, raw HTML allowed) with npm `markdown-it`, and prints what
// came out as JSON: the HTML, every raw-HTML token (html_block/html_inline:
// markup that passed through unescaped), the number of cells in each table
// row, and the text of every text token. (tests/it/markdown.rs)
import { readFileSync } from "node:fs";
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: true, linkify: true });
const source = readFileSync(process.argv[2], "utf8");
const tokens = md.parse(source, {});
const rawHtml = [];
const rows = [];
const text = [];
let cells = null;
const walk = (list) => {
  for (const token of list) {
    if (token.type === "html_block" || token.type === "html_inline") rawHtml.push(token.content);
    if (token.type === "tr_open") cells = 0;
    if (token.type === "th_open" || token.type === "td_open") cells += 1;
    if (token.type === "tr_close") rows.push(cells);
    if (token.type === "text" || token.type === "code_inline") text.push(token.content);
    if (token.children) walk(token.children);
  }
};
walk(tokens);
process.stdout.write(JSON.stringify({ html: md.render(source), rawHtml, rows, text: text.join("\n") }));
