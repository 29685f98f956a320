// Runs one session-manager operation with the real JavaScript libraries,
// for authd's interop tests. Usage: node session.cjs '<json>' where json is
// {"lib": "openlogin" | "v2", "op": "create" | "read" | "update" | "invalidate",
//  "url": sessionServerBaseUrl, "sessionId": hex, "data": any}.
// Prints the result as one JSON line: {"sessionId"} or {"data"}.
const { OpenloginSessionManager } = require("@toruslabs/openlogin-session-manager");
const { SessionManager } = require("@toruslabs/session-manager");

async function main(args) {
  const req = JSON.parse(args[0]);
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

// Exit at once: idle keep-alive connections would hold the process open.
if (require.main === module) {
  main(process.argv.slice(2)).then(
    (out) => {
      console.log(JSON.stringify(out));
      process.exit(0);
    },
    (err) => {
      console.error(err && err.message ? err.message : String(err));
      process.exit(1);
    },
  );
}

module.exports = main;
