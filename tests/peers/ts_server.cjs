// A handshake-era peer: the official TypeScript SDK 1.x (McpServer on Streamable HTTP, express),
// as people run it, stateful (a session per client) or --stateless.
//
// Installed by `make node-sdk` into var/node-sdk (never into var/node); run on the Node 22 of
// var/node by tests/peers/ts.py:
//   NODE_PATH=var/node-sdk/node_modules node tests/peers/ts_server.cjs --port P [--stateless]
//
// Tools:
// - echo {text}: "echo: {text}", asks nothing.
// - ask_twice: a name, then a colour, with server.elicitInput() naming no request, so the SDK
//   sends both questions on the session's standalone GET stream (what most TypeScript servers
//   do); "{name} likes {color}", or "stopped at {name|color}: {action}".
// - url_question: a URL-mode question, on the call's own stream; "url: {action}".
// - ping_client: server.ping() (standalone stream); "pong".
// With --question-timeout MS, ask_twice gives up on a question after MS milliseconds (the SDK
// sends notifications/cancelled for it, and the tool fails with "Request timed out").
// Sessions are counted: GET /_test/sessions is {opened, closed, active, open_ids}: opened =
// session ids issued on a 2xx initialize, closed = DELETEs answered 2xx. GET /_test/answers is
// [{id, session, action, error}] for every JSON-RPC response the client POSTed (its answers).
//
// --stateless: every POST gets a new McpServer that never saw the client's initialize, so it
// does not know the client declared elicitation: elicitInput throws at once and the tool
// answers isError "Client does not support form elicitation." (a stateless server cannot ask).
"use strict";

const { randomUUID } = require("node:crypto");
const express = require("express");
const { z } = require("zod");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const {
  StreamableHTTPServerTransport,
} = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { isInitializeRequest } = require("@modelcontextprotocol/sdk/types.js");

const args = process.argv.slice(2);
const port = Number(args[args.indexOf("--port") + 1]);
const stateless = args.includes("--stateless");
// --question-timeout MS: how long ask_twice waits for each answer (the SDK's default is 60 s);
// past it the SDK sends notifications/cancelled for the question and the tool fails.
const questionTimeout = args.includes("--question-timeout")
  ? Number(args[args.indexOf("--question-timeout") + 1])
  : undefined;
const askOptions = questionTimeout ? { timeout: questionTimeout } : undefined;

function text(value) {
  return { content: [{ type: "text", text: value }] };
}

function build() {
  const server = new McpServer({ name: "mrtrweb-ts-peer", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Say the text back.", inputSchema: { text: z.string() } },
    async ({ text: value }) => text(`echo: ${value}`),
  );
  server.registerTool("ask_twice", { description: "Ask a name, then a colour." }, async () => {
    const first = await server.server.elicitInput({
      message: "What is your name?",
      requestedSchema: {
        type: "object",
        properties: { name: { type: "string", description: "Your name" } },
        required: ["name"],
      },
    }, askOptions);
    if (first.action !== "accept") return text(`stopped at name: ${first.action}`);
    const second = await server.server.elicitInput({
      message: `Hello ${first.content.name}: your favourite colour?`,
      requestedSchema: {
        type: "object",
        properties: { color: { type: "string", default: "blue" } },
      },
    }, askOptions);
    if (second.action !== "accept") return text(`stopped at color: ${second.action}`);
    return text(`${first.content.name} likes ${second.content.color}`);
  });
  server.registerTool(
    "url_question",
    { description: "Send the person to a page of this server." },
    // A tool without an input schema gets `extra` as its only argument.
    async (extra) => {
      const result = await server.server.elicitInput(
        {
          mode: "url",
          message: "Sign in to continue",
          url: `http://127.0.0.1:${port}/authorize?ref=ts`,
          elicitationId: "ts-login",
        },
        { relatedRequestId: extra.requestId },
      );
      return text(`url: ${result.action}`);
    },
  );
  server.registerTool("ping_client", { description: "Ping the client." }, async () => {
    await server.server.ping();
    return text("pong");
  });
  return server;
}

const opened = [];
const closed = [];
const answers = [];
const transports = {};
const app = express();
app.use(express.json());

app.use((req, res, next) => {
  const session = req.headers["mcp-session-id"];
  const body = req.body;
  // A JSON-RPC response from the client: its answer to one of our questions.
  if (req.method === "POST" && body && !Array.isArray(body) && !("method" in body) && "id" in body) {
    const action = body.result && typeof body.result === "object" ? body.result.action : null;
    answers.push({ id: body.id, session: session || null, action: action ?? null, error: "error" in body });
  }
  res.on("finish", () => {
    const issued = res.getHeader("mcp-session-id");
    if (req.method === "POST" && !session && issued && res.statusCode < 300) {
      if (!opened.includes(issued)) opened.push(issued);
    }
    if (req.method === "DELETE" && session && res.statusCode < 300) closed.push(session);
  });
  next();
});

app.get("/_test/sessions", (_req, res) => {
  const open = opened.filter((s) => !closed.includes(s));
  res.json({ opened: opened.length, closed: closed.length, active: open.length, open_ids: open });
});
app.get("/_test/answers", (_req, res) => res.json(answers));
app.get("/authorize", (_req, res) => res.json({ ok: true }));

app.post("/mcp", async (req, res) => {
  if (stateless) {
    const server = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
    return;
  }
  const session = req.headers["mcp-session-id"];
  let transport = session ? transports[session] : undefined;
  if (!transport) {
    if (session || !isInitializeRequest(req.body)) {
      // An unknown session is gone (spec: 404); no session and no initialize is a bad request.
      res.status(session ? 404 : 400).json({
        jsonrpc: "2.0",
        error: { code: -32000, message: session ? "Session not found" : "Bad Request" },
        id: null,
      });
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports[id] = transport;
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) delete transports[transport.sessionId];
    };
    await build().connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
});

async function sessionRequest(req, res) {
  const transport = transports[req.headers["mcp-session-id"]];
  if (!transport) {
    res.status(stateless ? 405 : 404).send(stateless ? "Method Not Allowed" : "Session not found");
    return;
  }
  await transport.handleRequest(req, res);
}
app.get("/mcp", sessionRequest);
app.delete("/mcp", sessionRequest);

app.listen(port, "127.0.0.1");
