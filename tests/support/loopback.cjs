// Preloaded into the reference MCP servers (node --require): they listen on every interface;
// tests must only ever listen on loopback.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    const callback = args.find((a) => typeof a === "function");
    return listen.call(this, { port: Number(first), host: "127.0.0.1" }, callback);
  }
  if (first && typeof first === "object" && !first.path) {
    return listen.call(this, { ...first, host: "127.0.0.1" }, ...args.slice(1));
  }
  return listen.apply(this, args);
};

// With AGENTDESK_TEST_REQUEST_LOG set, everything the server reads on stdin (its JSON-RPC
// requests, over stdio) is appended to that file before the server handles it, so a test can
// wait until a request has reached the server instead of sleeping for a guess.
const requestLog = process.env.AGENTDESK_TEST_REQUEST_LOG;
if (requestLog) {
  const fs = require("fs");
  const emit = process.stdin.emit;
  process.stdin.emit = function (event, ...args) {
    if (event === "data") {
      fs.appendFileSync(requestLog, args[0]);
    }
    return emit.call(this, event, ...args);
  };
}
