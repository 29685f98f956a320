package server

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/network/txs"
	"github.com/porticohq/portico/network/upstream"
)

// networkView is what the admin API's nodes answer tells of a network
// besides its pool's view: the heads its family has, under the family's
// own names, and how many calls were answered from them.
type networkView struct {
	marks []headMark
	// fromHeads counts the calls answered from the network's heads
	// (eth_blockNumber, getSlot, starknet_blockNumber): no node sees them.
	fromHeads atomic.Uint64
}

// headMark is a head a family has and the tag its calls name it by.
type headMark struct {
	tag  string
	head portico.Head
}

// newNetworkView returns the view of a network whose nodes chain follows:
// its heads from the chain's tags, latest first (the rollup has no safe
// head, and the slot chain calls its heads processed, confirmed and
// finalized). Where two tags name one head, the first in order is kept.
func newNetworkView(chain portico.Chain) *networkView {
	v := &networkView{}
	for tag, head := range chain.Tags {
		v.marks = append(v.marks, headMark{tag, head})
	}
	slices.SortFunc(v.marks, func(a, b headMark) int {
		if a.head != b.head {
			return int(a.head) - int(b.head)
		}
		return cmp.Compare(a.tag, b.tag)
	})
	v.marks = slices.CompactFunc(v.marks, func(a, b headMark) bool { return a.head == b.head })
	return v
}

// counting returns table with every method that answers from the
// network's heads counting the calls it answers in v. The gateway calls a
// method's FromHeads only to answer a call with it, so the count is the
// calls answered without a node. The table's own slices are not changed.
func (v *networkView) counting(table portico.Table) portico.Table {
	wrap := func(ms []portico.Method) []portico.Method {
		out := slices.Clone(ms)
		for i := range out {
			if answer := out[i].FromHeads; answer != nil {
				out[i].FromHeads = func(p portico.Params, h portico.Heads) (jsontext.Value, bool) {
					res, ok := answer(p, h)
					if ok {
						v.fromHeads.Add(1)
					}
					return res, ok
				}
			}
		}
		return out
	}
	table.Methods, table.Known = wrap(table.Methods), wrap(table.Known)
	return table
}

// nodesNetwork is one network in the admin API's nodes answer
// (GET /admin/v1/nodes, docs/metering.md).
type nodesNetwork struct {
	Name string `json:"name"`
	// Heads are the pool's heads, all three numbers whatever the family
	// has; Marks are the heads the family has, by its tag names, in order:
	// what the dashboard shows.
	Heads  portico.Heads `json:"heads"`
	Marks  []nodesMark   `json:"marks"`
	MaxLag uint64        `json:"maxLag"`
	// FromHeads counts the calls answered from the heads since start;
	// the nodes' calls do not include them.
	FromHeads uint64               `json:"fromHeads"`
	Nodes     []upstream.NodeState `json:"nodes"`
	// Txs says what happened to the signed transactions sent for
	// clients (docs/nodes.md): counts since start, and the nodes each
	// broadcast send went to on average.
	Txs nodesTxs `json:"txs"`
}

// nodesTxs are a network's sent transactions in the nodes answer.
type nodesTxs struct {
	txs.Counts
	Broadcasts   uint64  `json:"broadcasts"`
	NodesPerSend float64 `json:"nodesPerSend"`
}

// nodesMark is one of a network's heads: the tag a call names it by and
// its number.
type nodesMark struct {
	Tag    string `json:"tag"`
	Number uint64 `json:"number"`
}

// nodes returns every network's nodes with the network's heads, for the
// admin API.
func (m *Server) nodes() any {
	var out []nodesNetwork
	cur := m.cur.Load()
	if cur == nil {
		return out
	}
	for _, sn := range cur.nets {
		p, n := sn.res.pool, sn.cfg
		heads := p.Heads()
		nn := nodesNetwork{Name: n.Name, Heads: heads, Marks: []nodesMark{}, MaxLag: p.MaxLag(), Nodes: p.Nodes()}
		if v := sn.res.view; v != nil {
			for _, mk := range v.marks {
				num, _ := heads.Of(mk.head)
				nn.Marks = append(nn.Marks, nodesMark{Tag: mk.tag, Number: num})
			}
			nn.FromHeads = v.fromHeads.Load()
		}
		nn.Txs = nodesTxs{Counts: sn.res.served.TxCounts(), Broadcasts: sn.res.sends.Load()}
		if nn.Txs.Broadcasts > 0 {
			nn.Txs.NodesPerSend = float64(sn.res.sendNodes.Load()) / float64(nn.Txs.Broadcasts)
		}
		out = append(out, nn)
	}
	return out
}
