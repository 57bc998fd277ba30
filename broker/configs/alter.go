package configs

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// OpType is an IncrementalAlterConfigs operation, numbered as on the wire.
type OpType int8

// Operations.
const (
	OpSet      OpType = 0
	OpDelete   OpType = 1
	OpAppend   OpType = 2
	OpSubtract OpType = 3
)

// String is Kafka's name for the operation, as in "Can't APPEND to key ...".
func (o OpType) String() string {
	switch o {
	case OpSet:
		return "SET"
	case OpDelete:
		return "DELETE"
	case OpAppend:
		return "APPEND"
	case OpSubtract:
		return "SUBTRACT"
	}
	return "OpType(" + strconv.Itoa(int(o)) + ")"
}

// Op is one config change of an IncrementalAlterConfigs resource. Value is
// nil when the request carries a null, which only DELETE may.
type Op struct {
	Name  string
	Op    OpType
	Value *string
}

// IncrementalAlter applies an IncrementalAlterConfigs resource's operations
// to a topic's overrides and returns the new overrides, validated with
// ValidateTopic. current is not modified.
//
// It follows Kafka: the broker first refuses, with ErrInvalidRequest, a
// resource naming a config twice ("Error due to duplicate config keys"), a
// null value on anything but DELETE ("Null value not supported for : a, b")
// and an unknown operation. Then, as Kafka's controller does, SET stores the
// value, DELETE removes the override, and APPEND and SUBTRACT, which only
// LIST configs take ("Can't APPEND to key retention.ms because its type is
// not LIST.", INVALID_CONFIG), edit the current override, or Kafka's default
// when there is none: APPEND compact to an unset cleanup.policy gives
// "delete,compact". APPEND adds each comma-separated item not already
// there; SUBTRACT removes one occurrence of each; the result is comma-joined
// and may be empty.
func IncrementalAlter(current map[string]string, ops []Op) (map[string]string, error) {
	if err := checkOps(ops); err != nil {
		return nil, err
	}
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range ops {
		if op.Op == OpAppend || op.Op == OpSubtract {
			if d, ok := topicByName[op.Name]; !ok || d.Type != TypeList {
				return nil, newError(ErrInvalidConfig, op.Name,
					"Can't "+op.Op.String()+" to key "+op.Name+" because its type is not LIST.")
			}
		}
		applyOp(next, op, topicByName[op.Name])
	}
	if err := ValidateTopic(next); err != nil {
		return nil, err
	}
	return next, nil
}

// IncrementalAlterBroker is IncrementalAlter for a BROKER resource: current
// holds the dynamic configs stored at scope (ScopePerBroker or
// ScopeClusterDefault), and the result is checked with ValidateBroker.
//
// The broker checks APPEND and SUBTRACT before forwarding the request, with
// its own messages: "Config value append is not allowed for config key: X"
// for a config that is not a LIST, "Unknown config name: X" for one the
// catalogue does not know (Kafka 4.1 fails there with an internal error).
// Both wrap ErrInvalidConfig and Kafka answers them with INVALID_CONFIG; the
// ValidateBroker errors get INVALID_REQUEST.
func IncrementalAlterBroker(current map[string]string, ops []Op, scope Scope) (map[string]string, error) {
	if err := checkOps(ops); err != nil {
		return nil, err
	}
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range ops {
		d := brokerByName[op.Name]
		if op.Op == OpAppend || op.Op == OpSubtract {
			if d == nil {
				return nil, newError(ErrUnknownConfig, op.Name, "Unknown config name: "+op.Name)
			}
			if d.Type != TypeList {
				verb := "append"
				if op.Op == OpSubtract {
					verb = "subtract"
				}
				return nil, newError(ErrInvalidConfig, op.Name,
					"Config value "+verb+" is not allowed for config key: "+op.Name)
			}
		}
		applyOp(next, op, d)
	}
	if err := ValidateBroker(next, scope); err != nil {
		return nil, err
	}
	return next, nil
}

// checkOps is the broker's preprocessing of a resource's operations.
func checkOps(ops []Op) error {
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Name] {
			return requestError(op.Name, "Error due to duplicate config keys")
		}
		seen[op.Name] = true
	}
	var nulls []string
	for _, op := range ops {
		if op.Op < OpSet || op.Op > OpSubtract {
			return requestError(op.Name, "Unknown operations type "+strconv.Itoa(int(op.Op)))
		}
		if op.Op != OpDelete && op.Value == nil {
			nulls = append(nulls, op.Name)
		}
	}
	if len(nulls) > 0 {
		return requestError(strings.Join(nulls, ","), "Null value not supported for : "+strings.Join(nulls, ", "))
	}
	return nil
}

// applyOp applies one checked operation to configs; d is the config's Def,
// needed for APPEND and SUBTRACT only.
func applyOp(configs map[string]string, op Op, d *Def) {
	switch op.Op {
	case OpSet:
		configs[op.Name] = *op.Value
	case OpDelete:
		delete(configs, op.Name)
	case OpAppend, OpSubtract:
		cur, ok := configs[op.Name]
		if !ok && !d.NullDefault {
			cur = d.Default
		}
		var items []string
		for _, s := range javaSplitComma(cur) {
			if s != "" {
				items = append(items, s)
			}
		}
		for _, s := range javaSplitComma(*op.Value) {
			i := slices.Index(items, s)
			switch {
			case op.Op == OpAppend && i < 0:
				items = append(items, s)
			case op.Op == OpSubtract && i >= 0:
				items = slices.Delete(items, i, i+1)
			}
		}
		configs[op.Name] = strings.Join(items, ",")
	}
}
