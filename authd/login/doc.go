// Package login is the auth server's login pages: the hosted pages an auth
// SDK opens at <sdkUrl>/start. They read the loginId from the URL fragment
// (posted back by a small inline script, since a fragment never reaches a
// server), fetch and decrypt the login payload from the session server,
// sign the user in with the requested provider (OpenID Connect by
// discovery, a custom JWT, or email passwordless), get the user's key from
// the key network, run tKey MFA when asked, and write the session record
// the SDK then reads.
//
// The pages are server-rendered html/template pages in nine languages,
// white-labelled from the SDK's InitParams. Per-login state lives in
// memory, bounded and with an expiry, keyed by an unguessable id and bound
// to a cookie. The server holds the user's key only in memory, for the
// request that needs it (or, during MFA setup or recovery, in the login's
// state until that step ends).
package login
