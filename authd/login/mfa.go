package login

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/authd/keynet"
	"github.com/porticohq/portico/authd/keynet/sss"
	"github.com/porticohq/portico/authd/tkey"
)

// mfaRecord is what the pages keep as the user's metadata on the key
// network (signed by the user's network key): the login count, for
// mfaLevel default, and the tKey metadata once MFA is on.
type mfaRecord struct {
	LoginCount int            `json:"loginCount,omitempty"`
	TKey       *tkey.Metadata `json:"tkey,omitempty"`
}

// DefaultMFAEvery is how often mfaLevel default offers MFA setup: on the
// first login and then on every third (1, 4, 7, …).
const DefaultMFAEvery = 3

// factorDefaults are the factors when mfaSettings leaves one out, in
// priority order; the device share is mandatory (it is what makes the
// usual login work with MFA on).
func factorDefaults() map[string]authwire.MfaSetting {
	p := func(i int) *int { return &i }
	t, f := true, false
	return map[string]authwire.MfaSetting{
		tkey.KindDevice:   {Enable: true, Priority: p(1), Mandatory: &t},
		tkey.KindBackup:   {Enable: true, Priority: p(2), Mandatory: &f},
		tkey.KindSocial:   {Enable: true, Priority: p(3), Mandatory: &f},
		tkey.KindPassword: {Enable: true, Priority: p(4), Mandatory: &f},
	}
}

// factors are the enabled factors in priority order (ties in the default
// order), from mfaSettings over the defaults.
func factors(s *authwire.MfaSettings, social bool) []factorView {
	set := factorDefaults()
	if s != nil {
		for kind, v := range map[string]*authwire.MfaSetting{tkey.KindDevice: s.DeviceShareFactor, tkey.KindBackup: s.BackUpShareFactor,
			tkey.KindSocial: s.SocialBackupFactor, tkey.KindPassword: s.PasswordFactor} {
			if v != nil {
				set[kind] = *v
			}
		}
	}
	order := []string{tkey.KindDevice, tkey.KindBackup, tkey.KindSocial, tkey.KindPassword}
	titles := map[string]string{tkey.KindDevice: "factor_device", tkey.KindBackup: "factor_backup", tkey.KindSocial: "factor_social", tkey.KindPassword: "factor_password"}
	var out []factorView
	prio := map[string]int{}
	for i, kind := range order {
		v := set[kind]
		if !v.Enable || (kind == tkey.KindSocial && !social) {
			continue
		}
		prio[kind] = 1000 + i
		if v.Priority != nil {
			prio[kind] = *v.Priority
		}
		out = append(out, factorView{Kind: kind, Title: titles[kind], Desc: titles[kind] + "_desc", Mandatory: v.Mandatory != nil && *v.Mandatory})
	}
	sort.SliceStable(out, func(i, j int) bool { return prio[out[i].Kind] < prio[out[j].Kind] })
	return out
}

func (h *Handler) setupFactors(f *flow) []factorView {
	return factors(f.Payload.Options.MfaSettings, h.cfg.Passwordless != nil)
}

// recoverFactors are the factors the user set up, besides the device.
func recoverFactors(f *flow) []factorView {
	var out []factorView
	if f.Record == nil || f.Record.TKey == nil {
		return nil
	}
	for _, fv := range factors(nil, true) {
		for _, si := range f.Record.TKey.Shares {
			if si.Kind == fv.Kind && fv.Kind != tkey.KindDevice {
				out = append(out, fv)
			}
		}
	}
	return out
}

func (h *Handler) network(f *flow) (*keynet.Client, error) {
	c, ok := h.cfg.Networks[string(f.Payload.Options.Network)]
	if !ok {
		return nil, fail(CodeNetworkUnavailable, fmt.Errorf("network %q is not served", f.Payload.Options.Network))
	}
	return c, nil
}

// afterIdentity gets the user's key from the key network and decides on
// MFA: recovery if it is on, setup as mfaLevel asks, or done.
func (h *Handler) afterIdentity(w http.ResponseWriter, r *http.Request, f *flow) {
	c, err := h.network(f)
	if err != nil {
		h.failFlow(w, r, f, err)
		return
	}
	id := f.Identity
	key, err := c.GetKey(r.Context(), id.Verifier, id.VerifierID, id.IDToken)
	if err != nil {
		h.failFlow(w, r, f, fail(CodeKeyNetwork, err))
		return
	}
	f.NetworkKey = key.PrivateKey
	f.NodeIndexes, f.NodeSigs = key.Used, nodeSignatures(key.Signed)
	if err := h.loadRecord(r.Context(), c, f); err != nil {
		h.failFlow(w, r, f, err)
		return
	}
	if f.Record.TKey != nil {
		if ds := f.Payload.Params.DappShare; ds != "" {
			if res, err := h.recoverWith(f, func(md *tkey.Metadata) (sss.Share, error) { return deviceShare(md, ds) }); err == nil {
				h.finish(w, r, f, res)
				return
			}
			h.log.Info("login: the dapp share does not fit; asking for another factor", "login", f.ID[:8])
		}
		if len(recoverFactors(f)) == 0 {
			h.failFlow(w, r, f, fail(CodeMFARequired, errors.New("MFA is on and no factor besides the device is set up")))
			return
		}
		f.Step = stepMFARecover
		http.Redirect(w, r, f.pageURL(), http.StatusSeeOther)
		return
	}
	switch f.Payload.Params.MfaLevel {
	case authwire.MFANone:
		h.finish(w, r, f, &result{CoreKey: f.NetworkKey})
		return
	case authwire.MFAMandatory:
		f.SkipAllowed = false
	case authwire.MFAOptional:
		f.SkipAllowed = true
	default:
		f.Record.LoginCount++
		if err := h.saveRecord(r.Context(), c, f); err != nil {
			h.log.Warn("login: cannot count the login", "err", err)
		}
		if (f.Record.LoginCount-1)%DefaultMFAEvery != 0 {
			h.finish(w, r, f, &result{CoreKey: f.NetworkKey})
			return
		}
		f.SkipAllowed = true
	}
	f.Step = stepMFASetup
	http.Redirect(w, r, f.pageURL(), http.StatusSeeOther)
}

// nodeSignatures writes the nodes' signed token commitments as the JSON
// strings of the session record's signatures.
func nodeSignatures(signed []keynet.CommitmentAnswer) []string {
	out := make([]string, 0, len(signed))
	for _, s := range signed {
		b, err := json.Marshal(s)
		if err == nil {
			out = append(out, string(b))
		}
	}
	return out
}

// loadRecord reads the user's metadata.
func (h *Handler) loadRecord(ctx context.Context, c *keynet.Client, f *flow) error {
	ver, data, err := c.GetMetadata(ctx, f.NetworkKey.PubKey())
	f.Record, f.RecordVer = &mfaRecord{}, 0
	if errors.Is(err, keynet.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fail(CodeKeyNetwork, err)
	}
	if err := json.Unmarshal([]byte(data), f.Record); err != nil {
		return fail(CodeInternal, fmt.Errorf("metadata: %w", err))
	}
	f.RecordVer = ver
	return nil
}

func (h *Handler) saveRecord(ctx context.Context, c *keynet.Client, f *flow) error {
	b, err := json.Marshal(f.Record)
	if err != nil {
		return err
	}
	if err := c.SetMetadata(ctx, f.NetworkKey, f.RecordVer+1, string(b)); err != nil {
		return err
	}
	f.RecordVer++
	return nil
}

// deviceShare is the SDK's dapp share (the device share's value in hex)
// at the metadata's device index.
func deviceShare(md *tkey.Metadata, dapp string) (sss.Share, error) {
	var s sss.Share
	b, err := hex.DecodeString(dapp)
	if err != nil || len(b) != 32 || s.Value.SetByteSlice(b) {
		return s, tkey.ErrBadShare
	}
	if s.Index, err = md.DeviceIndex(); err != nil {
		return s, err
	}
	return s, nil
}

// recoverWith rebuilds the final key from the network share and one other,
// and gives the device share back for the SDK to keep.
func (h *Handler) recoverWith(f *flow, other func(*tkey.Metadata) (sss.Share, error)) (*result, error) {
	md := f.Record.TKey
	s, err := other(md)
	if err != nil {
		return nil, err
	}
	nb, err := md.NetworkShare(f.NetworkKey)
	if err != nil {
		return nil, err
	}
	k, err := md.Reconstruct(nb, s)
	if err != nil {
		return nil, err
	}
	res := &result{CoreKey: k, MFAEnabled: true}
	if xd, err := md.DeviceIndex(); err == nil {
		res.DeviceShare = shareAt(&k.Key, nb, &xd)
	}
	return res, nil
}

// shareAt evaluates f(x) = k + a·x, the line through (0, k) and the
// network share, at x: f(x) = k + (y_B − k)·x / x_B.
func shareAt(k *secp256k1.ModNScalar, nb sss.Share, x *secp256k1.ModNScalar) string {
	var d, inv, y secp256k1.ModNScalar
	d.NegateVal(k).Add(&nb.Value)
	inv.InverseValNonConst(&nb.Index)
	d.Mul(&inv).Mul(x)
	y.Set(k).Add(&d)
	b := y.Bytes()
	return hex.EncodeToString(b[:])
}

// postMFASetup turns MFA on with the chosen factors.
func (h *Handler) postMFASetup(w http.ResponseWriter, r *http.Request, f *flow) {
	fs := h.setupFactors(f)
	pw, pw2 := r.PostForm.Get("password"), r.PostForm.Get("password2")
	backup := r.PostForm.Get("backupEmail")
	notice := ""
	has := map[string]bool{}
	for _, fv := range fs {
		has[fv.Kind] = true
		switch {
		case fv.Kind == tkey.KindPassword && fv.Mandatory && pw == "":
			notice = "mandatory_missing"
		case fv.Kind == tkey.KindSocial && fv.Mandatory && backup == "":
			notice = "mandatory_missing"
		}
	}
	switch {
	case notice != "":
	case pw != "" && !has[tkey.KindPassword], backup != "" && !has[tkey.KindSocial]:
		notice = "mandatory_missing"
	case pw != "" && len(pw) < 8:
		notice = "password_short"
	case pw != pw2:
		notice = "passwords_differ"
	case !has[tkey.KindDevice] && !has[tkey.KindBackup] && pw == "" && backup == "":
		notice = "mandatory_missing"
	}
	email, ok := "", true
	if backup != "" && notice == "" {
		if email, ok = normalizeEmail(backup); !ok {
			notice = "bad_email"
		}
	}
	if notice != "" {
		f.Notice = notice
		h.show(w, r, f)
		return
	}
	if email != "" {
		f.Social = &socialStep{Setup: true, Password: pw}
		if f.Notice = h.sendCode(r.Context(), f, &f.Social.Code, email); f.Notice != "" {
			h.show(w, r, f)
			return
		}
		f.Step = stepSocialCode
		http.Redirect(w, r, f.pageURL(), http.StatusSeeOther)
		return
	}
	h.enable(w, r, f, pw, nil)
}

// enable makes the tKey split and stores its metadata.
func (h *Handler) enable(w http.ResponseWriter, r *http.Request, f *flow, password string, social *secp256k1.PublicKey) {
	c, err := h.network(f)
	if err != nil {
		h.failFlow(w, r, f, err)
		return
	}
	if password != "" {
		if !h.lim.kdf.Acquire(r.Context().Done()) {
			f.Notice = "busy"
			h.show(w, r, f)
			return
		}
		defer h.lim.kdf.Release()
	}
	setup, err := tkey.Enable(f.NetworkKey, tkey.Options{Password: password, KDF: h.cfg.PasswordKDF, SocialBackup: social})
	if err != nil {
		h.failFlow(w, r, f, fail(CodeInternal, err))
		return
	}
	f.Record.TKey = setup.Metadata
	if err := h.saveRecord(r.Context(), c, f); err != nil {
		h.failFlow(w, r, f, fail(CodeKeyNetwork, err))
		return
	}
	res := &result{CoreKey: setup.FinalKey, MFAEnabled: true}
	has := map[string]bool{}
	for _, fv := range h.setupFactors(f) {
		has[fv.Kind] = true
	}
	if has[tkey.KindDevice] {
		b := setup.DeviceShare.Value.Bytes()
		res.DeviceShare = hex.EncodeToString(b[:])
	}
	if has[tkey.KindBackup] {
		res.Phrase = setup.BackupPhrase
		f.Done, f.Step = res, stepPhrase
		http.Redirect(w, r, f.pageURL(), http.StatusSeeOther)
		return
	}
	h.finish(w, r, f, res)
}

// postMFARecover takes a second factor.
func (h *Handler) postMFARecover(w http.ResponseWriter, r *http.Request, f *flow) {
	var get func(*tkey.Metadata) (sss.Share, error)
	notice := ""
	switch r.PostForm.Get("factor") {
	case tkey.KindPassword:
		h.recoverPassword(w, r, f, r.PostForm.Get("password"))
		return
	case tkey.KindBackup:
		phrase := r.PostForm.Get("phrase")
		get, notice = func(md *tkey.Metadata) (sss.Share, error) { return md.BackupShare(phrase) }, "wrong_phrase"
	case tkey.KindSocial:
		email, ok := normalizeEmail(r.PostForm.Get("backupEmail"))
		if !ok || h.cfg.Passwordless == nil {
			f.Notice = "bad_email"
			h.show(w, r, f)
			return
		}
		f.Social = &socialStep{}
		if f.Notice = h.sendCode(r.Context(), f, &f.Social.Code, email); f.Notice != "" {
			h.show(w, r, f)
			return
		}
		f.Step = stepSocialCode
		http.Redirect(w, r, f.pageURL(), http.StatusSeeOther)
		return
	default:
		h.show(w, r, f)
		return
	}
	res, err := h.recoverWith(f, get)
	if err != nil {
		f.Notice = notice
		h.show(w, r, f)
		return
	}
	h.finish(w, r, f, res)
}

// userKey names the user of a flow for the password limit.
func userKey(f *flow) string {
	return string(f.Payload.Options.Network) + "|" + f.Identity.Verifier + "|" + f.Identity.VerifierID
}

// recoverPassword tries the password factor within the limits: a user
// locked by wrong passwords is refused before any Argon2id runs, and at
// most KDFConcurrency runs happen at once (a request that cannot get a
// slot before it ends is told to retry).
func (h *Handler) recoverPassword(w http.ResponseWriter, r *http.Request, f *flow, pw string) {
	user := userKey(f)
	if h.lim.pwFails.Wait(user) > 0 {
		f.Notice = "password_locked"
		h.show(w, r, f)
		return
	}
	if !h.lim.kdf.Acquire(r.Context().Done()) {
		f.Notice = "busy"
		h.show(w, r, f)
		return
	}
	res, err := h.recoverWith(f, func(md *tkey.Metadata) (sss.Share, error) { return md.PasswordShare(pw) })
	h.lim.kdf.Release()
	if err != nil {
		f.Notice = "wrong_password"
		if _, lock := h.lim.pwFails.Fail(user); lock > 0 {
			f.Notice = "password_locked"
		}
		h.show(w, r, f)
		return
	}
	h.lim.pwFails.Reset(user)
	h.finish(w, r, f, res)
}

// postSocialCode signs the backup account in (email passwordless) and
// uses its network key: its public key for setup, the key for recovery.
func (h *Handler) postSocialCode(w http.ResponseWriter, r *http.Request, f *flow) {
	if !h.checkCode(w, r, f, &f.Social.Code) {
		return
	}
	email := f.Social.Code.Email
	token, err := h.cfg.Passwordless.mint(email, h.cfg.Now())
	if err != nil {
		h.failFlow(w, r, f, fail(CodeInternal, err))
		return
	}
	c, err := h.network(f)
	if err != nil {
		h.failFlow(w, r, f, err)
		return
	}
	bk, err := c.GetKey(r.Context(), PasswordlessVerifier, email, token)
	if err != nil {
		h.failFlow(w, r, f, fail(CodeKeyNetwork, err))
		return
	}
	defer bk.PrivateKey.Zero()
	if f.Social.Setup {
		pw := f.Social.Password
		f.Social = nil
		h.enable(w, r, f, pw, bk.PublicKey)
		return
	}
	f.Social = nil
	res, err := h.recoverWith(f, func(md *tkey.Metadata) (sss.Share, error) { return md.SocialShare(bk.PrivateKey) })
	if err != nil {
		f.Step, f.Notice = stepMFARecover, "err_token_refused"
		h.show(w, r, f)
		return
	}
	h.finish(w, r, f, res)
}
