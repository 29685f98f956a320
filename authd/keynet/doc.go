// Package keynet is the key network: n nodes (indexes 1..n) that together
// hold every user's secp256k1 key as Shamir shares, so that no node ever
// holds or sees a key, and a client that logs in against them.
//
// The protocol follows the real network's (research §3):
//
//  1. The client makes a temporary key pair and sends CommitmentRequest
//     {tokencommitment = keccak256(idToken), temppubx, temppuby,
//     verifieridentifier} to every node; each node signs the commitment.
//  2. Once ⌊3n/4⌋+1 nodes have signed, the client sends
//     GetShareOrKeyAssign with the id token and the signatures. Each node
//     verifies the token itself (its own idtoken verifiers), checks that a
//     threshold of valid node signatures commit to this token and this
//     temporary key, refuses a token it has already served, and returns
//     its own share, ECIES-encrypted (eccrypto format) to the temporary
//     key, with the public polynomial of the user's key.
//  3. The first time a (verifier, verifierId) asks, the nodes assign a key
//     by a Joint-Feldman distributed key generation: each node deals a
//     random polynomial of degree t−1, sends every other node its
//     evaluation (ECIES-encrypted to that node, signed) with Feldman
//     commitments, checks what it receives, and keeps the sum of the
//     evaluations at its index: its share of a key that is the sum of the
//     dealers' secrets, which no node knows. The summed commitments are
//     the public polynomial; its constant term is the public key.
//  4. The client checks each share against the public polynomial that a
//     threshold of nodes agree on, and Lagrange-interpolates subsets of t
//     shares until the result's public key is that public key.
//
// The threshold is t = ⌊n/2⌋+1. Each network (mainnet, testnet, cyan,
// aqua, celeste, sapphire_devnet, sapphire_mainnet) is its own node set
// with its own keys. Everything a node needs is in NodeConfig and all
// node-to-node messages go over HTTP, so nodes run in one process
// (Embedded) or as separate processes alike (StartProcess, one node of a
// network file; InitNetwork writes such a file for nodes on one machine).
//
// Nodes also keep users' tKey metadata (SetMetadata/GetMetadata): opaque
// data signed by the user's network key, kept if its version is newer.
package keynet
