// Regenerates ecies-node.json with Node's own crypto (an implementation
// independent of the Go package): node nodevector.js > ecies-node.json
const crypto = require("crypto");
const recipient = crypto.createECDH("secp256k1");
recipient.generateKeys();
const ephem = crypto.createECDH("secp256k1");
ephem.generateKeys();
const shared = ephem.computeSecret(recipient.getPublicKey()); // x coordinate, 32 bytes
const h = crypto.createHash("sha512").update(shared).digest();
const iv = crypto.randomBytes(16);
const plaintext = JSON.stringify({ privKey: "00ff", userInfo: { typeOfLogin: "google" } });
const c = crypto.createCipheriv("aes-256-cbc", h.subarray(0, 32), iv);
const ct = Buffer.concat([c.update(plaintext, "utf8"), c.final()]);
const ephemPub = ephem.getPublicKey(); // uncompressed, 65 bytes
const mac = crypto.createHmac("sha256", h.subarray(32)).update(Buffer.concat([iv, ephemPub, ct])).digest();
console.log(JSON.stringify({
  privateKey: recipient.getPrivateKey().toString("hex").padStart(64, "0"),
  plaintext,
  encrypted: { iv: iv.toString("hex"), ephemPublicKey: ephemPub.toString("hex"), ciphertext: ct.toString("hex"), mac: mac.toString("hex") },
}, null, 2));
