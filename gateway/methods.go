package gateway

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/porticohq/portico"
)

// Methods is a network's resolved method table: every name a client may use
// (real names, the seed's stand-ins, the family's alias prefixes) mapped to
// the row that serves it, with costs and the allowlist from config applied.
type Methods struct {
	family  portico.Family
	byName  map[string]*portico.Method
	chain   portico.Chain   // how tags resolve to heads
	keyForm portico.KeyForm // which params share a cache key
	// subs are the family's subscriptions; subByName and unsubByName
	// find a subscribe or unsubscribe method under any of its names.
	subs        portico.Subscriptions
	subByName   map[string]*portico.Subscription
	unsubByName map[string]*portico.Subscription
}

// MethodsConfig adjusts a family table for one network.
type MethodsConfig struct {
	// Allow replaces the table's default allowlist when not nil.
	Allow []string
	// Enable adds to the allowlist: the name of one of the table's
	// Optional groups adds the group, a method name adds that method.
	Enable []string
	// Costs overrides costs by method name (real name or alias).
	Costs map[string]int
	// DefaultCost replaces the table's default cost when positive.
	DefaultCost int
	// NotificationCosts overrides the cost of each notification by
	// subscription kind ("newHeads", "logs", "slot").
	NotificationCosts map[string]int
}

// NewMethods resolves a family table. It fails when an allowlisted name
// cannot be a method of the family (it does not match the table's
// NamePattern), an enabled name is neither a group nor a method name, or a
// cost names a method that is neither a row nor allowlisted, since that is
// a typo in config. Errors name the config field: methods[i], enable[i]
// or costs.<name>. It also fails on a table whose statement of a method's
// contracts (portico.Contracts) cannot be followed.
func NewMethods(t portico.Table, cfg MethodsConfig) (*Methods, error) {
	defCost := t.DefaultCost
	if cfg.DefaultCost > 0 {
		defCost = cfg.DefaultCost
	}
	allow, err := allowlist(t, cfg)
	if err != nil {
		return nil, err
	}
	m := &Methods{family: t.Family, byName: map[string]*portico.Method{}, chain: t.Chain, keyForm: t.KeyForm, subs: t.Subscriptions,
		subByName: map[string]*portico.Subscription{}, unsubByName: map[string]*portico.Subscription{}}
	// The rules are copied: costs from config apply to this network only.
	m.subs.Methods = slices.Clone(t.Subscriptions.Methods)
	kinds := map[string]bool{}
	for i := range m.subs.Methods {
		s := &m.subs.Methods[i]
		costs := maps.Clone(s.NotificationCost)
		for kind := range costs {
			kinds[kind] = true
			if c, ok := cfg.NotificationCosts[kind]; ok {
				costs[kind] = c
			}
		}
		s.NotificationCost = costs
		for kind, c := range s.Contracts {
			if err := checkStatement(&c); err != nil {
				return nil, fmt.Errorf("the %s table's contracts of %s %s: %v", t.Family, s.Method, kind, err)
			}
		}
		if c, ok := cfg.Costs[s.Method]; ok {
			s.Cost = c
		}
		for _, name := range append([]string{s.Method}, s.Aliases...) {
			for _, n := range withPrefixAliases(t.AliasPrefixes, name) {
				m.subByName[n] = s
			}
		}
		for _, n := range withPrefixAliases(t.AliasPrefixes, s.Unsubscribe) {
			m.unsubByName[n] = s
		}
	}
	add := func(row *portico.Method, names ...string) error {
		if err := checkStatement(&row.Contracts); err != nil {
			return fmt.Errorf("the %s table's contracts of %s: %v", t.Family, row.Name, err)
		}
		for _, name := range names {
			for _, n := range withPrefixAliases(t.AliasPrefixes, name) {
				if prev, ok := m.byName[n]; ok && prev != row {
					return fmt.Errorf("method %s is defined twice", n)
				}
				m.byName[n] = row
			}
		}
		return nil
	}
	for i := range t.Methods {
		row := t.Methods[i]
		if row.Contracts.Reads == portico.ReadsUnstated {
			row.Contracts = t.Contracts[row.Name]
		}
		if err := add(&row, append([]string{row.Name}, row.Aliases...)...); err != nil {
			return nil, err
		}
	}
	known := map[string]portico.Method{}
	for _, k := range t.Known {
		known[k.Name] = k
	}
	for _, name := range allow {
		name = canonical(t.AliasPrefixes, name)
		if _, ok := m.byName[name]; ok {
			continue // a row of its own already serves it
		}
		row, ok := known[name]
		if !ok {
			row = portico.Method{Name: name}
		}
		if row.Cost == 0 {
			row.Cost = t.Costs[name]
		}
		if row.Cost == 0 {
			row.Cost = defCost
		}
		row.Write = row.Write || slices.Contains(t.Writes, name)
		if row.Contracts.Reads == portico.ReadsUnstated {
			row.Contracts = t.Contracts[name]
		}
		if err := add(&row, name); err != nil {
			return nil, err
		}
	}
	for kind := range cfg.NotificationCosts {
		if !kinds[kind] {
			return nil, fmt.Errorf("notification_costs.%s: not a subscription kind of the %s family", kind, t.Family)
		}
	}
	names := make([]string, 0, len(cfg.Costs))
	for name := range cfg.Costs {
		if _, ok := m.subByName[name]; ok {
			continue // a subscribe method's cost, applied above
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		row, ok := m.byName[name]
		if !ok {
			return nil, fmt.Errorf("costs.%s: not a method of the %s family, nor in its allowlist", name, t.Family)
		}
		row.Cost = cfg.Costs[name]
	}
	return m, nil
}

// allowlist returns the names a network serves besides the table's rows:
// the default allowlist or the config's, and what the config enables.
func allowlist(t portico.Table, cfg MethodsConfig) ([]string, error) {
	var re *regexp.Regexp
	if t.NamePattern != "" {
		var err error
		if re, err = regexp.Compile(t.NamePattern); err != nil {
			return nil, fmt.Errorf("the %s table's name pattern: %v", t.Family, err)
		}
	}
	allow := t.DefaultAllow
	if cfg.Allow != nil {
		allow = cfg.Allow
		for i, name := range allow {
			if re != nil && !re.MatchString(name) {
				return nil, fmt.Errorf("methods[%d]: %q is not a method name of the %s family (want %s)", i, name, t.Family, t.NamePattern)
			}
		}
	}
	if len(cfg.Enable) == 0 {
		return allow, nil
	}
	allow = slices.Clone(allow)
	for i, name := range cfg.Enable {
		if group, ok := t.Optional[name]; ok {
			allow = append(allow, group...)
			continue
		}
		if re != nil && !re.MatchString(name) {
			groups := slices.Sorted(maps.Keys(t.Optional))
			return nil, fmt.Errorf("enable[%d]: %q is neither a method group of the %s family (%s) nor a method name (%s)", i, name, t.Family, strings.Join(groups, ", "), t.NamePattern)
		}
		allow = append(allow, name)
	}
	return allow, nil
}

// Family returns the family of the table.
func (m *Methods) Family() portico.Family { return m.family }

// Lookup returns the row serving name, or nil.
func (m *Methods) Lookup(name string) *portico.Method { return m.byName[name] }

// AnyOf reports whether one of names (in any of their accepted spellings)
// resolves to row.
func (m *Methods) AnyOf(row *portico.Method, names []string) bool {
	for _, n := range names {
		if m.byName[n] == row {
			return true
		}
	}
	return false
}

// Subscription returns the subscribe rule served under name, or nil.
func (m *Methods) Subscription(name string) *portico.Subscription { return m.subByName[name] }

// anySub reports whether one of names is a name of subscription s.
func (m *Methods) anySub(s *portico.Subscription, names []string) bool {
	for _, n := range names {
		if m.subByName[n] == s {
			return true
		}
	}
	return false
}

// Names returns the real names served, sorted.
func (m *Methods) Names() []string {
	seen := map[string]bool{}
	var out []string
	for _, row := range m.byName {
		if !seen[row.Name] {
			seen[row.Name] = true
			out = append(out, row.Name)
		}
	}
	sort.Strings(out)
	return out
}

// withPrefixAliases returns name and its stand-in form: eth_getProof gives
// eth_getProof and evm_getProof when prefixes maps "evm_" to "eth_".
func withPrefixAliases(prefixes map[string]string, name string) []string {
	out := []string{name}
	for alias, real := range prefixes {
		if rest, ok := strings.CutPrefix(name, real); ok {
			out = append(out, alias+rest)
		}
	}
	return out
}

// canonical turns a stand-in name into the real one.
func canonical(prefixes map[string]string, name string) string {
	for alias, real := range prefixes {
		if rest, ok := strings.CutPrefix(name, alias); ok {
			return real + rest
		}
	}
	return name
}

// Subscriptions returns the family's subscription rules with the
// network's configured costs, for the network that serves them.
func (m *Methods) Subscriptions() portico.Subscriptions { return m.subs }

// KeyForm returns how the family's params are made canonical for cache
// keys.
func (m *Methods) KeyForm() portico.KeyForm { return m.keyForm }

// Chain returns the family's head-tracking hooks and block tags.
func (m *Methods) Chain() portico.Chain { return m.chain }
