// Runs the interop scripts in one Node.js process for authd's interop
// tests: each line on stdin is {"script": "session" | "ecies" | "openlogin",
// "args": [...]}, answered by one line {"out": <result>} or {"error": "..."}.
// The libraries' own console output goes to stderr.
const scripts = {
  session: require("./session.cjs"),
  ecies: require("./ecies.cjs"),
  openlogin: require("./openlogin.cjs"),
};
const write = (o) => process.stdout.write(JSON.stringify(o) + "\n");
console.log = console.error;
console.warn = console.error;
console.info = console.error;

const rl = require("readline").createInterface({ input: process.stdin });
let queue = Promise.resolve();
rl.on("line", (line) => {
  queue = queue.then(async () => {
    try {
      const req = JSON.parse(line);
      const out = await scripts[req.script](req.args);
      write({ out: typeof out === "string" ? out : JSON.stringify(out) });
    } catch (err) {
      write({ error: err && err.stack ? err.stack : String(err) });
    }
  });
});
rl.on("close", () => queue.then(() => process.exit(0)));
