// Package authwire holds the types that the auth SDK (package auth) and the
// auth server (the login pages under authd) both put on the wire: the init
// and login params an app configures, the login payload the SDK stores for
// the pages, the session record (State and UserInfo) the pages write back,
// and the enumerations they use (networks, build environments, languages,
// login providers, MFA levels). The SDK re-exports every name, so apps use
// auth.InitParams and never import this package.
//
// The package has no I/O and imports only the standard library, so the
// server can share the SDK's types without linking the SDK (its OS keyring,
// D-Bus and browser opener).
//
// The JSON is the Swift SDK's v7 Codable form, byte for byte: the goldens
// in auth/testdata check it.
package authwire
