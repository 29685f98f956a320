// A login started and finished by the real JavaScript web SDK
// (@toruslabs/openlogin 6.x, redirect mode), in Node with a minimal window,
// for authd's interop tests. Usage:
//   node openlogin.cjs start '<json>'   json: {sdkUrl, sessionServer, redirectUrl, clientId, network, loginProvider, extraLoginOptions}
//     prints {"loginUrl"}: where OpenLogin sent the browser.
//   node openlogin.cjs finish '<json>'  json: {sdkUrl, sessionServer, redirectUrl, clientId, network, callbackUrl}
//     runs init() on the callback URL and prints {privKey, coreKitKey, ed25519PrivKey, userInfo, state}.
function fakeWindow(href) {
  const loc = new URL(href);
  const w = {
    history: { state: {}, replaceState() {} },
    navigator: { userAgent: "node" },
    open() {},
  };
  w.location = {
    get href() {
      return loc.href;
    },
    set href(v) {
      w.navigatedTo = v;
    },
    replace(v) {
      w.navigatedTo = v;
    },
    origin: loc.origin,
    protocol: loc.protocol,
    host: loc.host,
    pathname: loc.pathname,
    search: loc.search,
    hash: loc.hash,
  };
  return w;
}

async function main(args) {
  const [op, arg] = args;
  const req = JSON.parse(arg);
  global.window = fakeWindow(op === "finish" ? req.callbackUrl : req.redirectUrl);
  const { default: OpenLogin } = require("@toruslabs/openlogin");
  const ol = new OpenLogin({
    clientId: req.clientId,
    network: req.network,
    sdkUrl: req.sdkUrl,
    storageServerUrl: req.sessionServer,
    redirectUrl: req.redirectUrl,
    uxMode: "redirect",
  });
  await ol.init();
  if (op === "start") {
    await ol.login({ loginProvider: req.loginProvider, mfaLevel: "none", extraLoginOptions: req.extraLoginOptions });
    return { loginUrl: global.window.navigatedTo };
  }
  return { privKey: ol.privKey, coreKitKey: ol.coreKitKey, ed25519PrivKey: ol.ed25519PrivKey, userInfo: ol.state.userInfo, state: ol.state };
}

// Exit at once: idle keep-alive connections would hold the process open.
if (require.main === module) {
  main(process.argv.slice(2)).then(
    (out) => {
      console.log(JSON.stringify(out));
      process.exit(0);
    },
    (err) => {
      console.error(err && err.stack ? err.stack : String(err));
      process.exit(1);
    },
  );
}

module.exports = main;
