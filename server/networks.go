package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/metering/membudget"
	"github.com/porticohq/portico/network"
	"github.com/porticohq/portico/network/txs"
	"github.com/porticohq/portico/network/upstream"
)

// network builds one network: its method table and its upstream pool,
// starting an embedded devnet when it has no upstream. What it opens is
// closed with the network (servedNetwork.close), by Close or, once a
// reload has replaced it and it is idle, by the reload.
func (m *Server) network(ctx context.Context, n *config.Network, meter network.Meter, noCoalesce bool) (_ *servedNetwork, err error) {
	fam, err := families.Get(n.Family)
	if err != nil {
		return nil, err
	}
	res := &netResources{}
	defer func() {
		if err != nil {
			res.close()
		}
	}()
	var members []upstream.Member
	for _, u := range n.Upstreams {
		node, err := upstream.Dial(u.URL, m.nodeOptions())
		if err != nil {
			return nil, err
		}
		name := u.Name
		if name == "" {
			name = upstream.Redact(u.URL)
		}
		member := upstream.Member{Name: name, Node: node, Reach: u.Reach()}
		if u.WSURL != "" {
			ws := upstream.NewWebSocket(u.WSURL, m.nodeOptions())
			res.closers = append(res.closers, ws)
			member.Subs = ws
		}
		members = append(members, member)
	}
	embedded := len(members) == 0 && !n.Devnet.Disabled
	if embedded {
		member, err := m.devnet(ctx, fam, n, res)
		if err != nil {
			return nil, err
		}
		members = append(members, member)
	}
	table := fam.Table(embedded)
	res.view = newNetworkView(table.Chain)
	res.table = res.view.counting(table)
	methods, err := gateway.NewMethods(res.table, methodsConfig(n))
	if err != nil {
		return nil, err
	}
	if len(members) == 0 {
		m.log.Warn("network has no upstream; its calls fail until one is configured", "network", n.Name, "family", n.Family)
	}
	res.pool = upstream.NewPool(upstream.PoolConfig{
		Network: n.Name, Members: members, Timeout: n.Timeout, AttemptTimeout: n.AttemptTimeout, Logger: m.log,
		Chain: table.Chain, ChainID: n.ChainID, MaxLag: n.MaxLag, PollInterval: n.PollInterval,
		Hedge:     upstream.Hedge{Disabled: n.Hedge.Disabled, MinDelay: n.Hedge.MinDelay, MaxDelay: n.Hedge.MaxDelay},
		Broadcast: broadcastOf(n.Broadcast),
		OnBroadcast: func(nodes int) {
			m.metrics.TxBroadcast(n.Name, nodes)
			res.sends.Add(1)
			res.sendNodes.Add(uint64(nodes))
		},
		OnAttempt: m.attemptObserver(n.Name), Tracer: m.tracer,
	})
	res.closers = append(res.closers, res.pool)
	if err := res.pool.Start(ctx); err != nil {
		return nil, err
	}
	verifyCfg, err := verifyConfig(n)
	if err != nil {
		return nil, err
	}
	verifyCfg.CallCost = verifyCallCost(res.table, n)
	res.served = network.New(network.Config{Name: n.Name, Upstream: res.pool, Tags: methods.Chain().Tags, KeyForm: methods.KeyForm(), Subs: methods.Subscriptions(),
		Cache: m.cache, NoCoalesce: noCoalesce, Meter: meter, Logger: m.log, Metrics: m.metrics, Logs: logSettings(n), Verify: verifyCfg,
		Txs: table.Txs, TxSettings: txs.Settings{Wait: n.Transactions.SyncTimeout, MaxWait: n.Transactions.SyncTimeoutMax, ResendAfter: n.Transactions.ResendAfter},
		TxMemory: membudget.New("transactions", 0, m.memory())})
	return &servedNetwork{cfg: *n, res: res,
		gw: &gateway.Network{Name: n.Name, Hosts: n.HostNames(), Methods: methods, Served: res.served}}, nil
}

// methodsConfig is what a network's config says of its method table.
func methodsConfig(n *config.Network) gateway.MethodsConfig {
	return gateway.MethodsConfig{Allow: n.Methods, Enable: n.Enable, Costs: n.Costs, DefaultCost: n.DefaultCost, NotificationCosts: n.NotificationCosts}
}

// nodeOptions are the options of every node: answers bounded by
// limits.max_result_bytes.
func (m *Server) nodeOptions() *upstream.Options {
	return &upstream.Options{MaxResponseBytes: m.Config.Limits.MaxResultBytes}
}

// devnet starts the family's embedded devnet for network n, prints what
// it offers, and returns it as an upstream member called in-process.
func (m *Server) devnet(ctx context.Context, fam families.Family, n *config.Network, res *netResources) (upstream.Member, error) {
	d, err := fam.NewDevnet(devnetConfig(m.Config.DataDir, m.log, n))
	if err != nil {
		return upstream.Member{}, err
	}
	res.closers = append(res.closers, d)
	if err := d.Start(ctx); err != nil {
		return upstream.Member{}, err
	}
	res.devnet = d
	h := d.Handler()
	if h == nil {
		return upstream.Member{}, fmt.Errorf("embedded %s devnet has no JSON-RPC handler", n.Family)
	}
	fmt.Fprintf(m.Stdout, "%s: %s\n", n.Name, d.Info())
	// The devnet also listens on loopback for its own clients; the
	// gateway calls its handler in-process, through the same Node
	// interface as a remote node.
	member := upstream.Member{Name: n.Name + "/embedded", Node: upstream.NewInProcess(h, m.nodeOptions())}
	// Subscriptions: the family's own way in-process, else the devnet's
	// WebSocket endpoint.
	if fam.Subscriber != nil {
		s, closeSubs := fam.Subscriber(d)
		member.Subs = s
		res.closers = append(res.closers, closerFunc(closeSubs))
	} else if u := d.WSURL(); u != "" {
		ws := upstream.NewWebSocket(u, m.nodeOptions())
		res.closers = append(res.closers, ws)
		member.Subs = ws
	}
	return member, nil
}

// devnetConfig is the embedded devnet's configuration for network n: its
// chain under dataDir/<network>.
func devnetConfig(dataDir string, log *slog.Logger, n *config.Network) families.DevnetConfig {
	if dataDir != "" {
		dataDir = filepath.Join(dataDir, n.Name)
	}
	return families.DevnetConfig{
		DataDir:     dataDir,
		BlockPeriod: n.Devnet.BlockPeriod,
		Traffic:     n.Devnet.Traffic == nil || *n.Devnet.Traffic,
		Accounts:    n.Devnet.Accounts,
		KeepSlots:   n.Devnet.KeepSlots,
		GenesisFile: n.Devnet.Genesis,
		ChainRLP:    n.Devnet.ChainRLP,
		Logger:      log.With("devnet", n.Name),
	}
}

// broadcastOf is where a network's config sends signed transactions.
func broadcastOf(b []string) upstream.Broadcast {
	switch {
	case len(b) == 1 && b[0] == config.BroadcastFirst:
		return upstream.Broadcast{First: true}
	case len(b) == 1 && b[0] == config.BroadcastAll:
		return upstream.Broadcast{}
	}
	return upstream.Broadcast{To: b}
}

// logSettings are a network's log settings, with the chunk width its
// nodes' config says they take (config.Network.NodeRange).
func logSettings(n *config.Network) portico.LogSettings {
	l := n.Logs.Settings()
	l.NodeRange = n.NodeRange()
	return l
}
