// ECIES with the real JavaScript eccrypto (@toruslabs/eccrypto 4.x), for
// authd's interop tests. Usage:
//   node ecies.cjs encrypt <publicKeyHex> <plaintextHex> [leading-zero]
//     prints {"iv","ephemPublicKey","ciphertext","mac"} (hex); with
//     leading-zero, an ephemeral key is chosen whose shared x coordinate
//     has a leading zero byte (eccrypto then hashes it unpadded).
//   node ecies.cjs decrypt <privateKeyHex> <json>
//     prints the plaintext as hex.
const eccrypto = require("@toruslabs/eccrypto");

async function main() {
  const [op, key, arg, flag] = process.argv.slice(2);
  if (op === "encrypt") {
    const pub = Buffer.from(key, "hex");
    const opts = {};
    if (flag === "leading-zero") {
      for (;;) {
        const e = eccrypto.generatePrivate();
        const x = await eccrypto.deriveUnpadded(e, pub);
        if (x.length < 32) {
          opts.ephemPrivateKey = e;
          break;
        }
      }
    }
    const enc = await eccrypto.encrypt(pub, Buffer.from(arg, "hex"), opts);
    return JSON.stringify({
      iv: enc.iv.toString("hex"),
      ephemPublicKey: enc.ephemPublicKey.toString("hex"),
      ciphertext: enc.ciphertext.toString("hex"),
      mac: enc.mac.toString("hex"),
    });
  }
  if (op === "decrypt") {
    const e = JSON.parse(arg);
    const opts = {};
    for (const k of ["iv", "ephemPublicKey", "ciphertext", "mac"]) opts[k] = Buffer.from(e[k], "hex");
    const pt = await eccrypto.decrypt(Buffer.from(key, "hex"), opts);
    return pt.toString("hex");
  }
  throw new Error("unknown op " + op);
}

main().then(
  (out) => console.log(out),
  (err) => {
    console.error(err && err.message ? err.message : String(err));
    process.exit(1);
  },
);
