// ECIES with the real JavaScript eccrypto (@toruslabs/eccrypto 4.x), for
// authd's interop tests. Usage:
//   node ecies.cjs encrypt <publicKeyHex> <plaintextHex> [ephemeralPrivateKeyHex]
//     prints {"iv","ephemPublicKey","ciphertext","mac"} (hex); the test
//     passes an ephemeral key to make the shared x coordinate start with a
//     zero byte (eccrypto then hashes it unpadded).
//   node ecies.cjs decrypt <privateKeyHex> <json>
//     prints the plaintext as hex.
const eccrypto = require("@toruslabs/eccrypto");

async function main(args) {
  const [op, key, arg, flag] = args;
  if (op === "encrypt") {
    const pub = Buffer.from(key, "hex");
    const opts = {};
    if (flag) {
      opts.ephemPrivateKey = Buffer.from(flag, "hex");
      const x = await eccrypto.deriveUnpadded(opts.ephemPrivateKey, pub);
      if (x.length === 32) throw new Error("the shared x coordinate has no leading zero byte");
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

// Exit at once: idle keep-alive connections would hold the process open.
if (require.main === module) {
  main(process.argv.slice(2)).then(
    (out) => {
      console.log(out);
      process.exit(0);
    },
    (err) => {
      console.error(err && err.message ? err.message : String(err));
      process.exit(1);
    },
  );
}

module.exports = main;
