package idtoken

import (
	"context"
	"sort"
)

// Registry holds the verifiers of a login page or a key node, by name.
// It is read-only once made and safe for concurrent use.
type Registry struct {
	byName map[string]Verifier
}

// NewRegistry makes a verifier for each entry; names must be unique. It
// does no I/O.
func NewRegistry(cfgs []Config, opts Options) (*Registry, error) {
	r := &Registry{byName: make(map[string]Verifier, len(cfgs))}
	for _, c := range cfgs {
		if _, dup := r.byName[c.Verifier]; dup {
			return nil, c.bad("verifier", "configured twice")
		}
		v, err := New(c, opts)
		if err != nil {
			return nil, err
		}
		r.byName[c.Verifier] = v
	}
	return r, nil
}

// Verify checks token for the named verifier.
func (r *Registry) Verify(ctx context.Context, verifier, token string) (*Identity, error) {
	v, ok := r.byName[verifier]
	if !ok {
		return nil, &TokenError{Verifier: verifier, Field: "verifier", Err: ErrUnknownVerifier}
	}
	return v.Verify(ctx, token)
}

// Names lists the configured verifiers, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
