// Package keyderiv turns the key the key network (or tKey) gives back, the
// coreKitKey, into the keys an app sees, as the real SDK does:
//
//   - privKey is an app-scoped subkey of coreKitKey: the left output of the
//     MiMC-sponge Feistel permutation (BN254 scalar field, 220 rounds, x^5,
//     circomlib round constants) run on xL = 1, xR = coreKitKey and the round
//     key k = (base64-decoded clientId as a big-endian integer) mod n, where n
//     is the order of secp256k1. Two apps (client ids) get unrelated keys
//     from one user key; an app's key does not reveal the user key.
//   - ed25519PrivKey (and coreKitEd25519PrivKey) is the 64-byte ed25519
//     private key seed‖pub whose seed is the 32-byte secp256k1 key.
//
// Keys are written as 64 (ed25519: 128) lower-case hex characters,
// zero-padded on the left: JS implementations drop leading zeros, so input
// may be shorter and is padded back.
package keyderiv
