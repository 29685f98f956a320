// Package idtoken verifies identity tokens (JWTs) for the login pages and
// for each node of the key network, which checks every token itself.
//
// A verifier is configured from a loginConfig-style entry (Config): either a
// custom JWT verifier with its keys (a JWKS URL, fetched and cached and
// refreshed when a token names an unknown key id, or inline keys as a JWK
// set or PEM) and the expected issuer and audience, or an OpenID Connect
// verifier found by its discovery URL, with the client id as audience.
// Both check exp, nbf and iat with the entry's leeway and read the verifier
// id from the entry's verifierIdField ("sub" by default), lower-cased
// unless isVerifierIdCaseSensitive.
//
// Only asymmetric algorithms from a fixed allowlist are accepted (RS*, PS*,
// ES256/384/512, EdDSA), and the key must be of the type the algorithm
// needs: "none", HMAC (HS256 signed with an RSA public key as the secret)
// and a key of another type are refused before any signature check.
//
// Tokens are never logged nor put in errors.
package idtoken
