package auth

import "github.com/porticohq/portico/auth/authwire"

// The enumerations are authwire's, re-exported under the SDK's names.

// Network is the key network a client id is registered on.
type Network = authwire.Network

// The networks of the v7 SDK; sapphire_devnet and sapphire_mainnet are new
// in v7.
const (
	Mainnet         = authwire.Mainnet
	Testnet         = authwire.Testnet
	Cyan            = authwire.Cyan
	Aqua            = authwire.Aqua
	Celeste         = authwire.Celeste
	SapphireDevnet  = authwire.SapphireDevnet
	SapphireMainnet = authwire.SapphireMainnet
)

// Networks lists every Network value.
func Networks() []Network { return authwire.Networks() }

// BuildEnv chooses the hosted login pages' environment.
type BuildEnv = authwire.BuildEnv

// The build environments; the empty value means Production.
const (
	Production = authwire.Production
	Staging    = authwire.Staging
	Testing    = authwire.Testing
)

// ChainNamespace is the chain family the keys are meant for.
type ChainNamespace = authwire.ChainNamespace

// The chain namespaces. The Swift SDK spelled EIP155 "eip555" until 7.1.0;
// MigrateV6 rewrites that spelling.
const (
	EIP155 = authwire.EIP155
	Solana = authwire.Solana
)

// Language is a language of the login pages.
type Language = authwire.Language

// The nine languages of the v7 login pages.
const (
	English    = authwire.English
	German     = authwire.German
	Japanese   = authwire.Japanese
	Korean     = authwire.Korean
	Mandarin   = authwire.Mandarin
	Spanish    = authwire.Spanish
	French     = authwire.French
	Portuguese = authwire.Portuguese
	Dutch      = authwire.Dutch
)

// Languages lists every Language value.
func Languages() []Language { return authwire.Languages() }

// ThemeModes is the colour mode of the login pages.
type ThemeModes = authwire.ThemeModes

// The theme modes.
const (
	ModeLight = authwire.ModeLight
	ModeDark  = authwire.ModeDark
	ModeAuto  = authwire.ModeAuto
)

// TypeOfLogin names a login method; it keys InitParams.LoginConfig.
type TypeOfLogin = authwire.TypeOfLogin

// The login types (unchanged from v6 to v7).
const (
	TypeGoogle        = authwire.TypeGoogle
	TypeFacebook      = authwire.TypeFacebook
	TypeReddit        = authwire.TypeReddit
	TypeDiscord       = authwire.TypeDiscord
	TypeTwitch        = authwire.TypeTwitch
	TypeApple         = authwire.TypeApple
	TypeGitHub        = authwire.TypeGitHub
	TypeLinkedIn      = authwire.TypeLinkedIn
	TypeTwitter       = authwire.TypeTwitter
	TypeWeibo         = authwire.TypeWeibo
	TypeLine          = authwire.TypeLine
	TypeEmailPassword = authwire.TypeEmailPassword
	TypePasswordless  = authwire.TypePasswordless
	TypeJWT           = authwire.TypeJWT
)

// TypesOfLogin lists every TypeOfLogin value.
func TypesOfLogin() []TypeOfLogin { return authwire.TypesOfLogin() }

// Provider is the login provider a login starts with (LoginParams.LoginProvider).
type Provider = authwire.Provider

// The login providers (unchanged from v6 to v7).
const (
	Google            = authwire.Google
	Facebook          = authwire.Facebook
	Reddit            = authwire.Reddit
	Discord           = authwire.Discord
	Twitch            = authwire.Twitch
	Apple             = authwire.Apple
	Line              = authwire.Line
	GitHub            = authwire.GitHub
	Kakao             = authwire.Kakao
	LinkedIn          = authwire.LinkedIn
	Twitter           = authwire.Twitter
	Weibo             = authwire.Weibo
	WeChat            = authwire.WeChat
	EmailPasswordless = authwire.EmailPasswordless
	JWT               = authwire.JWT
)

// Providers lists every Provider value.
func Providers() []Provider { return authwire.Providers() }

// MFALevel says when the login pages ask for a second factor.
type MFALevel = authwire.MFALevel

// The MFA levels: Default asks on every third login, Optional on every
// login (skippable), Mandatory requires setting MFA up, None never asks.
const (
	MFADefault   = authwire.MFADefault
	MFAOptional  = authwire.MFAOptional
	MFAMandatory = authwire.MFAMandatory
	MFANone      = authwire.MFANone
)

// Curve is the curve whose public key goes into the id token's wallets
// claim. The private keys returned are the same either way.
type Curve = authwire.Curve

// The supported curves; the empty value means SECP256K1.
const (
	SECP256K1 = authwire.SECP256K1
	ED25519   = authwire.ED25519
)
