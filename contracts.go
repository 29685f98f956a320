package portico

// Contracts says where a method's params name the contracts (accounts) a
// call executes or reads, so that a key's contract-address allowlist
// (docs/keys.md) checks exactly what the family's nodes will act on. Each
// method of a family states it in its table (Method.Contracts, or
// Table.Contracts for methods without a row); the zero value states
// nothing, and a key with an address allowlist is refused such a method.
//
// The description is read strictly: a call for such a key is served only
// when every node of the family reads its params alike. Objects are
// closed (a member the description does not name, in any other spelling,
// or named twice, is refused: nodes differ on case and on which of two
// members counts), and a param the description does not list is refused.
type Contracts struct {
	// Reads says whether and how the method reaches contracts.
	Reads Reads
	// Params are the method's params by position, as far as the check
	// needs them (with Reads == ReadsNamed). A call with more params than
	// are listed is refused; a Required one that is missing is refused.
	Params []Param
	// ByName says that the family's nodes also take the params as one
	// object, by each Param's Name; without it such params are refused.
	ByName bool
}

// Reads says whether a method reaches contracts.
type Reads uint8

// How methods reach contracts.
const (
	// ReadsUnstated is the zero value: the table says nothing. Refused
	// for a key with an address allowlist; a family's table test refuses
	// it for the methods the family serves.
	ReadsUnstated Reads = iota
	// ReadsNone marks a method that names and reads no contract's state
	// (a head, a gas price, the chain's blocks, transactions and
	// receipts, a signed transaction sent as it is).
	ReadsNone
	// ReadsNamed marks a method that reads or runs the contracts its
	// params name, where Params says: each must be on the list, and a
	// call that names none is refused (it would reach any contract).
	ReadsNamed
	// ReadsAny marks a method that may read contracts its params cannot
	// bound (a trace, whose tracer reads any state; a block's access
	// list): refused for a key with an address allowlist.
	ReadsAny
)

// Param is one param of a call: its name (for params given by name, and
// for messages) and its shape.
type Param struct {
	Name  string
	Shape Shape
}

// Shape describes a JSON value as far as contract addresses go.
type Shape struct {
	// Kind is what the value is.
	Kind ShapeKind
	// Required marks a value that must be there and name at least one
	// address (ShapeAddress, ShapeAddresses, ShapeAddressKeys), or an
	// object member or param that must be given: without it the call
	// would reach any contract (a log filter without address, a call
	// without to, which creates a contract and runs its code).
	Required bool
	// Members are the members of a ShapeObject, by their exact names.
	Members []Member
	// Elem is the shape of each element of a ShapeList.
	Elem *Shape
}

// Member is one member of an object.
type Member struct {
	Name  string
	Shape Shape
}

// ShapeKind says what a value is.
type ShapeKind uint8

// The kinds of values.
const (
	// ShapeAny is a value that names no contract (a block, gas, data):
	// it is not read.
	ShapeAny ShapeKind = iota
	// ShapeAddress is one address, a string; null names none.
	ShapeAddress
	// ShapeAddresses is one address or a list of them (a log filter's
	// address); null or an empty list names none.
	ShapeAddresses
	// ShapeObject is an object of exactly Members: any other member, or
	// one given twice, is refused.
	ShapeObject
	// ShapeList is a list of Elem; null is an empty list.
	ShapeList
	// ShapeAddressKeys is an object whose member names are addresses and
	// whose values name no contract (eth_getStorageValues' requests).
	ShapeAddressKeys
	// ShapeAbsent is a value that must be left out, null or empty ({} or
	// []) for a key with an address allowlist: a state or block override,
	// an authorization list, which change the code or state the listed
	// contracts run with.
	ShapeAbsent
)
