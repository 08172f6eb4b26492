// The official TypeScript MCP client (@modelcontextprotocol/sdk) against docmind: over Streamable HTTP
// to a running `docmind serve` (DOCMIND_MCP_URL) and over stdio to `docmind mcp` started by the client
// (DOCMIND_BIN, on a fresh data directory DOCMIND_STDIO_DATA whose demo it ingests). The client validates
// every structured result against the tool's output schema. TestTypeScriptClient in cmd/docmind starts
// the server and runs this file; run alone, it needs those variables.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const tools = ["search", "ask", "list_knowledge_bases", "list_documents", "get_document", "get_chunk", "ingest"];

async function waitDemo(client) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await client.callTool({ name: "list_documents", arguments: { kb: "demo" } });
    const docs = res.isError ? [] : res.structuredContent.documents;
    if (docs.length > 0 && docs.every((d) => d.status === "ready")) return docs;
    assert.ok(Date.now() < deadline, "the demo was not ingested in time: " + JSON.stringify(res));
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function exercise(client, question) {
  const { tools: listed } = await client.listTools();
  for (const name of tools) {
    const tool = listed.find((t) => t.name === name);
    assert.ok(tool, `tool ${name} is listed`);
    assert.equal(tool.inputSchema.type, "object");
    assert.equal(tool.outputSchema.type, "object");
  }
  await waitDemo(client);

  const search = await client.callTool({ name: "search", arguments: { query: "paid annual leave days", kbs: ["demo"] } });
  assert.ok(!search.isError, JSON.stringify(search));
  for (const stage of ["keyword", "vector", "fused", "reranked", "evidence"]) {
    assert.ok(search.structuredContent[stage].length > 0, `search stage ${stage} is empty`);
  }

  const progress = [];
  const ask = await client.callTool({ name: "ask", arguments: { question, kbs: ["demo"] } }, undefined, {
    onprogress: (p) => progress.push(p),
  });
  assert.ok(!ask.isError, JSON.stringify(ask));
  const out = ask.structuredContent;
  assert.match(out.answer, /\[1\]/);
  assert.ok(out.sources.length > 0 && out.sources[0].chunk_id, "numbered sources");
  assert.ok(out.confidence.band !== "", "a confidence band");
  assert.ok(progress.length > 0, "progress notifications while ask ran");
  assert.ok(progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress), "progress increases");

  const chunk = await client.callTool({ name: "get_chunk", arguments: { id: out.sources[0].chunk_id } });
  assert.ok(!chunk.isError, JSON.stringify(chunk));
  assert.equal(chunk.structuredContent.chunk.chapter ?? "", out.sources[0].chapter ?? "");

  const missing = await client.callTool({ name: "get_document", arguments: { id: "doc_nope" } });
  assert.equal(missing.isError, true);
  assert.equal(missing.content[0].text, 'NotFound: no document "doc_nope"');
}

test("Streamable HTTP to docmind serve", { skip: !process.env.DOCMIND_MCP_URL && "set DOCMIND_MCP_URL" }, async () => {
  const client = new Client({ name: "docmind-ts-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(process.env.DOCMIND_MCP_URL)));
  try {
    await exercise(client, "How many days of paid annual leave do full-time employees get?");
  } finally {
    await client.close();
  }
});

test("stdio to docmind mcp", { skip: !process.env.DOCMIND_BIN && "set DOCMIND_BIN and DOCMIND_STDIO_DATA" }, async () => {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("DOCMIND_")));
  const transport = new StdioClientTransport({
    command: process.env.DOCMIND_BIN,
    args: ["mcp", "--data", process.env.DOCMIND_STDIO_DATA],
    env,
    stderr: "ignore",
  });
  const client = new Client({ name: "docmind-ts-test", version: "1.0.0" });
  await client.connect(transport);
  try {
    await exercise(client, "Do part-time employees get annual leave?");
  } finally {
    await client.close();
  }
});
