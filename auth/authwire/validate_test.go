package authwire

import (
	"errors"
	"testing"
)

func TestInitParamsValidate(t *testing.T) {
	ok := InitParams{ClientID: "c", Network: SapphireDevnet}
	cases := []struct {
		name   string
		mutate func(*InitParams)
		field  string
	}{
		{"ok", func(*InitParams) {}, ""},
		{"every network", func(p *InitParams) { p.Network = Celeste }, ""},
		{"no client id", func(p *InitParams) { p.ClientID = " " }, "clientId"},
		{"no network", func(p *InitParams) { p.Network = "" }, "network"},
		{"unknown network", func(p *InitParams) { p.Network = "sapphire" }, "network"},
		{"unknown build env", func(p *InitParams) { p.BuildEnv = "prod" }, "buildEnv"},
		{"bad sdk url", func(p *InitParams) { p.SDKURL = "ftp://x" }, "sdkUrl"},
		{"relative redirect", func(p *InitParams) { p.RedirectURL = "/cb" }, "redirectUrl"},
		{"unknown language", func(p *InitParams) { p.WhiteLabel = &WhiteLabelData{DefaultLanguage: "it"} }, "whiteLabel.defaultLanguage"},
		{"unknown mode", func(p *InitParams) { p.WhiteLabel = &WhiteLabelData{Mode: "dim"} }, "whiteLabel.mode"},
		{"login config without client id", func(p *InitParams) {
			p.LoginConfig = map[string]LoginConfig{"google": {Verifier: "v", TypeOfLogin: TypeGoogle}}
		}, "loginConfig.google.clientId"},
		{"login config bad type", func(p *InitParams) {
			p.LoginConfig = map[string]LoginConfig{"x": {Verifier: "v", TypeOfLogin: "myspace", ClientID: "c"}}
		}, "loginConfig.x.typeOfLogin"},
		{"login config no verifier", func(p *InitParams) {
			p.LoginConfig = map[string]LoginConfig{"x": {TypeOfLogin: TypeJWT, ClientID: "c"}}
		}, "loginConfig.x.verifier"},
		{"old namespace spelling", func(p *InitParams) { p.ChainNamespace = "eip555" }, "chainNamespace"},
		{"session time max", func(p *InitParams) { p.SessionTime = MaxSessionTime }, ""},
		{"session time too long", func(p *InitParams) { p.SessionTime = MaxSessionTime + 1 }, "sessionTime"},
		{"session time negative", func(p *InitParams) { p.SessionTime = -1 }, "sessionTime"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ok
			c.mutate(&p)
			err := p.Validate()
			if c.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("err = %v, want field %s", err, c.field)
			}
		})
	}
}

func TestLoginParamsValidate(t *testing.T) {
	cases := []struct {
		p     LoginParams
		field string
	}{
		{LoginParams{LoginProvider: Google}, ""},
		{LoginParams{LoginProvider: EmailPasswordless, MfaLevel: MFANone, Curve: ED25519}, ""},
		{LoginParams{}, "loginProvider"},
		{LoginParams{LoginProvider: "myspace"}, "loginProvider"},
		{LoginParams{LoginProvider: Google, MfaLevel: "always"}, "mfaLevel"},
		{LoginParams{LoginProvider: Google, Curve: "p256"}, "curve"},
		{LoginParams{LoginProvider: Google, RedirectURL: "nope"}, "redirectUrl"},
	}
	for _, c := range cases {
		err := c.p.Validate()
		var fe *FieldError
		if c.field == "" && err != nil || c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field) {
			t.Errorf("%+v: err = %v, want field %q", c.p, err, c.field)
		}
	}
}

func TestWhiteLabelDefaults(t *testing.T) {
	w := WhiteLabelData{Theme: map[string]string{"secondary": "#000"}, Mode: ModeDark}.WithDefaults()
	if w.DefaultLanguage != English || w.Mode != ModeDark || w.Theme["primary"] != DefaultPrimaryColor || w.Theme["secondary"] != "#000" || *w.UseLogoLoader {
		t.Fatalf("%+v", w)
	}
	custom := WhiteLabelData{Theme: map[string]string{"primary": "#111"}}.WithDefaults()
	if custom.Theme["primary"] != "#111" {
		t.Fatal("primary overwritten")
	}
}
