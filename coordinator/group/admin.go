package group

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the group admin APIs: DescribeGroups, ListGroups and
// DeleteGroups. Each answers for this coordinator's groups only.

// describeGroups handles DescribeGroups. A group that does not exist is
// reported Dead; from v6 also with GROUP_ID_NOT_FOUND (KIP-1043).
func (c *Coordinator) describeGroups(in Input, req *kmsg.DescribeGroupsRequest) {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.Version = req.Version
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		if req.Version >= 3 && req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = allGroupOperations
			if in.AuthorizedOperations != nil {
				rg.AuthorizedOperations = in.AuthorizedOperations(id)
			}
		}
		g := c.groups[id]
		if g == nil || g.consumer != nil {
			rg.State = StateDead.String()
			if req.Version >= 6 {
				rg.ErrorCode = errGroupIDNotFound
				rg.ErrorMessage = strPtr("Group " + id + " not found.")
				if g != nil {
					rg.ErrorMessage = strPtr("Group " + id + " is not a classic group.")
				}
				// Kafka reports operations only for a group answered
				// without an error.
				rg.AuthorizedOperations = math.MinInt32
			}
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State = g.state.String()
		rg.ProtocolType = g.protocolType
		stable := g.state == StateStable
		if stable {
			rg.Protocol = g.protocol
		}
		for _, mid := range g.order {
			m := g.members[mid]
			dm := kmsg.NewDescribeGroupsResponseGroupMember()
			dm.MemberID = m.id
			dm.InstanceID = m.instanceID
			dm.ClientID = m.clientID
			dm.ClientHost = m.clientHost
			dm.MemberAssignment = nonNil(m.assignment)
			dm.ProtocolMetadata = []byte{}
			if stable {
				// The metadata shown is that of the selected protocol,
				// known only once the group is stable.
				dm.ProtocolMetadata = nonNil(m.metadata(g.protocol))
			}
			rg.Members = append(rg.Members, dm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	c.respond(in.Token, resp)
}

// listGroups handles ListGroups, with the v4 state filter and the v5 type
// filter (both case-insensitive; every group here is "classic").
func (c *Coordinator) listGroups(in Input, req *kmsg.ListGroupsRequest) {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.Version = req.Version
	states := make(map[string]bool)
	if req.Version >= 4 {
		for _, s := range req.StatesFilter {
			states[strings.ToLower(strings.TrimSpace(s))] = true
		}
	}
	types := make(map[string]bool)
	if req.Version >= 5 {
		for _, t := range req.TypesFilter {
			types[strings.ToLower(strings.TrimSpace(t))] = true
		}
	}
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		typ, state, protocolType := classicGroupType, g.state.String(), g.protocolType
		if g.consumer != nil {
			typ, state, protocolType = consumerGroupType, g.consumer.state().String(), consumerProtocolType
		}
		if (len(types) > 0 && !types[typ]) || (len(states) > 0 && !states[strings.ToLower(state)]) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = id
		lg.ProtocolType = protocolType
		lg.GroupState = state
		lg.GroupType = typ
		resp.Groups = append(resp.Groups, lg)
	}
	for _, id := range slices.Sorted(maps.Keys(c.shares)) {
		state := c.shares[id].state()
		if (len(types) > 0 && !types[shareGroupType]) || (len(states) > 0 && !states[strings.ToLower(state)]) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = id, shareProtocolType, state, shareGroupType
		resp.Groups = append(resp.Groups, lg)
	}
	c.respond(in.Token, resp)
}

// deleteGroups handles DeleteGroups: an empty group is deleted with all its
// offsets (tombstones for each, then for the group), including those open
// transactions committed (a tombstone for each such partition without a
// committed offset, as Kafka writes); a group with members fails with
// NON_EMPTY_GROUP.
func (c *Coordinator) deleteGroups(in Input, req *kmsg.DeleteGroupsRequest) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Version = req.Version
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		g := c.groups[id]
		if sg := c.shares[id]; sg != nil {
			if len(sg.members) > 0 {
				rg.ErrorCode = errNonEmptyGroup
			} else {
				c.deleteShareGroup(sg)
			}
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		switch {
		case g == nil:
			rg.ErrorCode = errGroupIDNotFound
		case g.consumer != nil && len(g.consumer.members) > 0, g.consumer == nil && g.state != StateEmpty:
			rg.ErrorCode = errNonEmptyGroup
		default:
			for _, t := range g.sortedTopics() {
				for _, p := range g.sortedPartitions(t) {
					c.emit(offsetTombstone(id, t, p))
				}
			}
			for _, tp := range g.pendingPartitions(func(string) bool { return true }) {
				c.emit(offsetTombstone(id, tp.topic, tp.partition))
			}
			if g.consumer != nil {
				c.deleteConsumerState(g)
			} else {
				c.emit(groupTombstone(id))
			}
			c.dropGroup(g)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	c.respond(in.Token, resp)
}
