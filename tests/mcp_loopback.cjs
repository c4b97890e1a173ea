// Preloaded into a Node MCP server under test (NODE_OPTIONS=--require): every listening
// socket binds 127.0.0.1 only (the reference servers listen on all interfaces), the port the
// kernel picked for PORT=0 is written to $ASKGATE_TEST_PORT_FILE, and the body of every
// HTTP request the server receives is appended to $ASKGATE_TEST_REQUEST_LOG (what the
// server saw, for tests that assert a denied call never reached it).
"use strict";
const fs = require("node:fs");
const net = require("node:net");
const http = require("node:http");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || typeof args[0] === "string") {
    const port = Number(args[0]);
    const rest = args.slice(1).filter((a) => typeof a === "function");
    args = [{ port, host: "127.0.0.1" }, ...rest];
  }
  this.once("listening", () => {
    const file = process.env.ASKGATE_TEST_PORT_FILE;
    if (file) fs.writeFileSync(file, String(this.address().port));
  });
  return listen.apply(this, args);
};

// Watch the bytes as the server itself reads them (a listener of our own would start the
// stream flowing before the server's body parser is attached).
const emit = http.IncomingMessage.prototype.emit;
http.IncomingMessage.prototype.emit = function (event, ...args) {
  const log = process.env.ASKGATE_TEST_REQUEST_LOG;
  if (log && event === "data") {
    (this.__askgateChunks ||= []).push(Buffer.from(args[0]));
  } else if (log && event === "end") {
    const body = Buffer.concat(this.__askgateChunks || []).toString("utf8").replace(/\n/g, " ");
    fs.appendFileSync(log, `${this.method} ${body}\n`);
  }
  return emit.call(this, event, ...args);
};
