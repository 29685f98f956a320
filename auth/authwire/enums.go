package authwire

import "slices"

// Network is the key network a client id is registered on.
type Network string

// The networks of the v7 SDK; sapphire_devnet and sapphire_mainnet are new
// in v7.
const (
	Mainnet         Network = "mainnet"
	Testnet         Network = "testnet"
	Cyan            Network = "cyan"
	Aqua            Network = "aqua"
	Celeste         Network = "celeste"
	SapphireDevnet  Network = "sapphire_devnet"
	SapphireMainnet Network = "sapphire_mainnet"
)

// Networks lists every Network value.
func Networks() []Network {
	return []Network{Mainnet, Testnet, Cyan, Aqua, Celeste, SapphireDevnet, SapphireMainnet}
}

// Valid reports whether n is a known network.
func (n Network) Valid() bool { return slices.Contains(Networks(), n) }

// BuildEnv chooses the hosted login pages' environment.
type BuildEnv string

// The build environments; the empty value means Production.
const (
	Production BuildEnv = "production"
	Staging    BuildEnv = "staging"
	Testing    BuildEnv = "testing"
)

// Valid reports whether b is a known environment (the empty value counts:
// it means Production).
func (b BuildEnv) Valid() bool { return b == "" || b == Production || b == Staging || b == Testing }

// ChainNamespace is the chain family the keys are meant for.
type ChainNamespace string

// The chain namespaces. The Swift SDK spelled EIP155 "eip555" until 7.1.0;
// the SDK's v6 migration rewrites that spelling.
const (
	EIP155 ChainNamespace = "eip155"
	Solana ChainNamespace = "solana"
)

// Valid reports whether c is known (empty counts: not set).
func (c ChainNamespace) Valid() bool { return c == "" || c == EIP155 || c == Solana }

// Language is a language of the login pages.
type Language string

// The nine languages of the v7 login pages.
const (
	English    Language = "en"
	German     Language = "de"
	Japanese   Language = "ja"
	Korean     Language = "ko"
	Mandarin   Language = "zh"
	Spanish    Language = "es"
	French     Language = "fr"
	Portuguese Language = "pt"
	Dutch      Language = "nl"
)

// Languages lists every Language value.
func Languages() []Language {
	return []Language{English, German, Japanese, Korean, Mandarin, Spanish, French, Portuguese, Dutch}
}

// Valid reports whether l is known (empty counts: not set).
func (l Language) Valid() bool { return l == "" || slices.Contains(Languages(), l) }

// ThemeModes is the colour mode of the login pages.
type ThemeModes string

// The theme modes.
const (
	ModeLight ThemeModes = "light"
	ModeDark  ThemeModes = "dark"
	ModeAuto  ThemeModes = "auto"
)

// Valid reports whether m is known (empty counts: not set).
func (m ThemeModes) Valid() bool { return m == "" || m == ModeLight || m == ModeDark || m == ModeAuto }

// TypeOfLogin names a login method; it keys InitParams.LoginConfig.
type TypeOfLogin string

// The login types (unchanged from v6 to v7).
const (
	TypeGoogle        TypeOfLogin = "google"
	TypeFacebook      TypeOfLogin = "facebook"
	TypeReddit        TypeOfLogin = "reddit"
	TypeDiscord       TypeOfLogin = "discord"
	TypeTwitch        TypeOfLogin = "twitch"
	TypeApple         TypeOfLogin = "apple"
	TypeGitHub        TypeOfLogin = "github"
	TypeLinkedIn      TypeOfLogin = "linkedin"
	TypeTwitter       TypeOfLogin = "twitter"
	TypeWeibo         TypeOfLogin = "weibo"
	TypeLine          TypeOfLogin = "line"
	TypeEmailPassword TypeOfLogin = "email_password"
	TypePasswordless  TypeOfLogin = "passwordless"
	TypeJWT           TypeOfLogin = "jwt"
)

// TypesOfLogin lists every TypeOfLogin value.
func TypesOfLogin() []TypeOfLogin {
	return []TypeOfLogin{TypeGoogle, TypeFacebook, TypeReddit, TypeDiscord, TypeTwitch, TypeApple, TypeGitHub,
		TypeLinkedIn, TypeTwitter, TypeWeibo, TypeLine, TypeEmailPassword, TypePasswordless, TypeJWT}
}

// Valid reports whether t is known.
func (t TypeOfLogin) Valid() bool { return slices.Contains(TypesOfLogin(), t) }

// Provider is the login provider a login starts with (LoginParams.LoginProvider).
type Provider string

// The login providers (unchanged from v6 to v7).
const (
	Google            Provider = "google"
	Facebook          Provider = "facebook"
	Reddit            Provider = "reddit"
	Discord           Provider = "discord"
	Twitch            Provider = "twitch"
	Apple             Provider = "apple"
	Line              Provider = "line"
	GitHub            Provider = "github"
	Kakao             Provider = "kakao"
	LinkedIn          Provider = "linkedin"
	Twitter           Provider = "twitter"
	Weibo             Provider = "weibo"
	WeChat            Provider = "wechat"
	EmailPasswordless Provider = "email_passwordless"
	JWT               Provider = "jwt"
)

// Providers lists every Provider value.
func Providers() []Provider {
	return []Provider{Google, Facebook, Reddit, Discord, Twitch, Apple, Line, GitHub, Kakao, LinkedIn, Twitter,
		Weibo, WeChat, EmailPasswordless, JWT}
}

// Valid reports whether p is known.
func (p Provider) Valid() bool { return slices.Contains(Providers(), p) }

// MFALevel says when the login pages ask for a second factor.
type MFALevel string

// The MFA levels: Default asks on every third login, Optional on every
// login (skippable), Mandatory requires setting MFA up, None never asks.
const (
	MFADefault   MFALevel = "default"
	MFAOptional  MFALevel = "optional"
	MFAMandatory MFALevel = "mandatory"
	MFANone      MFALevel = "none"
)

// Valid reports whether m is known (empty counts: not set).
func (m MFALevel) Valid() bool {
	return m == "" || m == MFADefault || m == MFAOptional || m == MFAMandatory || m == MFANone
}

// Curve is the curve whose public key goes into the id token's wallets
// claim. The private keys returned are the same either way.
type Curve string

// The supported curves; the empty value means SECP256K1.
const (
	SECP256K1 Curve = "secp256k1"
	ED25519   Curve = "ed25519"
)

// Valid reports whether c is known (empty counts: SECP256K1).
func (c Curve) Valid() bool { return c == "" || c == SECP256K1 || c == ED25519 }
