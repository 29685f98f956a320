package login

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/keyderiv"
)

// finish derives the app's keys, writes the session record (ECIES to a
// fresh session key, for sessionTime seconds), ends the login and sends
// the browser back to the app with #sessionId=….
func (h *Handler) finish(w http.ResponseWriter, r *http.Request, f *flow, res *result) {
	if res == nil || res.CoreKey == nil || f.Identity == nil {
		h.failFlow(w, r, f, fail(CodeBadRequest, nil))
		return
	}
	defer func() {
		if res.CoreKey != f.NetworkKey {
			res.CoreKey.Zero() // the network key is zeroed when the login is dropped
		}
	}()
	opts := f.Payload.Options
	keys, err := keyderiv.Derive(h.sponge, eccrypto.PrivateKeyHex(res.CoreKey), opts.ClientID)
	if err != nil {
		h.failFlow(w, r, f, fail(CodeInternal, err))
		return
	}
	id := f.Identity
	mfa := res.MFAEnabled
	user := authwire.UserInfo{
		Name: id.userName(), ProfileImage: id.Picture, TypeOfLogin: id.TypeOfLogin, Verifier: id.Verifier,
		VerifierID: id.VerifierID, Email: id.Email, DappShare: res.DeviceShare, IDToken: id.IDToken,
		OAuthIDToken: id.OAuthIDToken, OAuthAccessToken: id.OAuthAccessToken, IsMfaEnabled: &mfa,
	}
	sessionKey, err := eccrypto.GenerateKey()
	if err != nil {
		h.failFlow(w, r, f, fail(CodeInternal, err))
		return
	}
	defer sessionKey.Zero()
	sessionID := eccrypto.PrivateKeyHex(sessionKey)
	mode := authwire.KeyMode1of1
	if mfa {
		mode = authwire.KeyMode2ofN
	}
	record, err := json.Marshal(authwire.State{
		PrivKey: keys.PrivKey, Ed25519PrivKey: keys.Ed25519PrivKey, SessionID: sessionID, UserInfo: &user,
		CoreKitKey: keys.CoreKitKey, CoreKitEd25519PrivKey: keys.CoreKitEd25519PrivKey,
		// What the key network honestly gives; the TSS fields stay unset.
		NodeIndexes: f.NodeIndexes, Signatures: f.NodeSigs, KeyMode: mode,
	})
	if err != nil {
		h.failFlow(w, r, f, fail(CodeInternal, err))
		return
	}
	if err := h.cfg.Sessions.Set(r.Context(), sessionKey, record, opts.EffectiveSessionTime()); err != nil {
		h.failFlow(w, r, f, fail(CodeSessionWrite, err))
		return
	}
	clear(record)
	h.flows.remove(f.ID)
	http.SetCookie(w, &http.Cookie{Name: cookieName(f.ID), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: h.cfg.SecureCookies})
	h.log.Info("login: done", "provider", f.Payload.Params.LoginProvider, "verifier", id.Verifier, "network", opts.Network, "mfa", mfa)
	frag := "sessionId=" + url.QueryEscape(sessionID) + "&sessionNamespace="
	http.Redirect(w, r, f.Payload.Params.RedirectURL+"#"+frag, http.StatusSeeOther)
}
