// Runs one session-manager operation with the real JavaScript libraries,
// for authd's interop tests. Usage: node session.cjs '<json>' where json is
// {"lib": "openlogin" | "v2", "op": "create" | "read" | "update" | "invalidate",
//  "url": sessionServerBaseUrl, "sessionId": hex, "data": any}.
// Prints the result as one JSON line: {"sessionId"} or {"data"}.
const { OpenloginSessionManager } = require("@toruslabs/openlogin-session-manager");
const { SessionManager } = require("@toruslabs/session-manager");

async function main() {
  const req = JSON.parse(process.argv[2]);
  const Lib = req.lib === "v2" ? SessionManager : OpenloginSessionManager;
  const sessionId = req.sessionId || Lib.generateRandomSessionKey();
  const sm = new Lib({ sessionServerBaseUrl: req.url, sessionId, sessionTime: req.sessionTime || 600 });
  switch (req.op) {
    case "create":
      await sm.createSession(req.data);
      return { sessionId };
    case "read":
      return { data: await sm.authorizeSession() };
    case "update":
      await sm.updateSession(req.data);
      return { sessionId };
    case "invalidate":
      await sm.invalidateSession();
      return { sessionId };
  }
  throw new Error("unknown op " + req.op);
}

main().then(
  (out) => console.log(JSON.stringify(out)),
  (err) => {
    console.error(err && err.message ? err.message : String(err));
    process.exit(1);
  },
);
