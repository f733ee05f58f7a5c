// Command groupcheck-franz-go-assignors runs franz-go's group balancers the way a franz-go group
// leader does, one NDJSON request per stdin line and one NDJSON answer per stdout line (groupcheck
// conformance/clients/protocol.md).
//
// Each member's JoinGroup metadata is a kmsg.ConsumerMemberMetadata (version 3) with the request's
// topics, owned partitions and generation; its user data is either given as bytes or made by the
// balancer's own JoinGroupMetadata from the member's prior assignment. The leader side follows
// kgo's balanceGroup: members sorted by member id, MemberBalancer, then BalanceOrError over the
// partition counts of the topics the members are interested in.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	maxLine       = 1 << 20
	maxMembers    = 64
	maxTopics     = 64
	maxPartitions = 4096
	maxUserData   = 1 << 16
)

type topicPartition struct {
	Topic     string
	Partition int32
}

func (tp *topicPartition) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) != 2 {
		return errors.New("each partition is [topic, partition]")
	}
	if err := json.Unmarshal(raw[0], &tp.Topic); err != nil {
		return errors.New("partition topic is not a string")
	}
	if err := json.Unmarshal(raw[1], &tp.Partition); err != nil || tp.Partition < 0 {
		return errors.New("partition number is not a non-negative int32")
	}
	return nil
}

func (tp topicPartition) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{tp.Topic, tp.Partition})
}

type prior struct {
	Partitions []topicPartition `json:"partitions"`
	Generation *int32           `json:"generation"`
}

type member struct {
	MemberID   *string          `json:"member_id"`
	Topics     []string         `json:"topics"`
	Owned      []topicPartition `json:"owned"`
	Generation *int32           `json:"generation"`
	UserData   *string          `json:"user_data"`
	Prior      *prior           `json:"prior"`
}

type request struct {
	ID         *int64           `json:"id"`
	Assignor   string           `json:"assignor"`
	Partitions map[string]int32 `json:"partitions"`
	Members    []member         `json:"members"`
}

type seen struct {
	MemberID   string           `json:"member_id"`
	Topics     []string         `json:"topics"`
	UserData   *string          `json:"user_data"`
	Owned      []topicPartition `json:"owned"`
	Generation int32            `json:"generation"`
}

type answer struct {
	ID            *int64                      `json:"id"`
	Subscriptions []seen                      `json:"subscriptions,omitempty"`
	OK            bool                        `json:"ok"`
	Assignment    map[string][]topicPartition `json:"assignment,omitempty"`
	Error         string                      `json:"error,omitempty"`
	BadRequest    string                      `json:"bad_request,omitempty"`
	Unavailable   string                      `json:"unavailable,omitempty"`
}

func balancerFor(name string) (kgo.GroupBalancer, error) {
	switch name {
	case "range":
		return kgo.RangeBalancer(), nil
	case "roundrobin":
		return kgo.RoundRobinBalancer(), nil
	case "sticky":
		return kgo.StickyBalancer(), nil
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer(), nil
	}
	return nil, fmt.Errorf("assignor: unknown %s", name)
}

func franzVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == "github.com/twmb/franz-go" {
			if dep.Replace != nil {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	return "unknown"
}

func byTopic(tps []topicPartition) map[string][]int32 {
	out := make(map[string][]int32)
	for _, tp := range tps {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	for _, ps := range out {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// metadata is the member's JoinGroup metadata as the leader receives it.
func metadata(b kgo.GroupBalancer, m member, where string) ([]byte, error) {
	if m.MemberID == nil || m.Generation == nil || m.Topics == nil || m.Owned == nil {
		return nil, fmt.Errorf("%s: member_id, topics, owned and generation are required", where)
	}
	if len(m.Topics) > maxTopics || len(m.Owned) > maxPartitions {
		return nil, fmt.Errorf("%s: too many topics or owned partitions", where)
	}
	if m.UserData != nil && m.Prior != nil {
		return nil, fmt.Errorf("%s: give user_data or prior, not both", where)
	}
	topics := append([]string(nil), m.Topics...)
	sort.Strings(topics)
	var userData []byte
	if m.UserData != nil {
		raw, err := base64.StdEncoding.DecodeString(*m.UserData)
		if err != nil || len(raw) > maxUserData {
			return nil, fmt.Errorf("%s.user_data: not base64 of at most %d bytes", where, maxUserData)
		}
		userData = raw
	} else if m.Prior != nil {
		if m.Prior.Generation == nil || m.Prior.Partitions == nil || len(m.Prior.Partitions) > maxPartitions {
			return nil, fmt.Errorf("%s.prior: partitions and generation are required", where)
		}
		var own kmsg.ConsumerMemberMetadata
		if err := own.ReadFrom(b.JoinGroupMetadata(topics, byTopic(m.Prior.Partitions), *m.Prior.Generation)); err != nil {
			return nil, fmt.Errorf("%s.prior: the balancer's own metadata does not parse: %v", where, err)
		}
		userData = own.UserData
	}
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = topics
	meta.UserData = userData
	meta.Generation = *m.Generation
	owned := byTopic(m.Owned)
	for _, topic := range sortedKeys(owned) {
		part := kmsg.NewConsumerMemberMetadataOwnedPartition()
		part.Topic = topic
		part.Partitions = owned[topic]
		meta.OwnedPartitions = append(meta.OwnedPartitions, part)
	}
	return meta.AppendTo(nil), nil
}

func describe(members []kmsg.JoinGroupResponseMember) ([]seen, error) {
	out := make([]seen, 0, len(members))
	for _, jm := range members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(jm.ProtocolMetadata); err != nil {
			return nil, err
		}
		s := seen{MemberID: jm.MemberID, Topics: meta.Topics, Generation: meta.Generation, Owned: []topicPartition{}}
		if s.Topics == nil {
			s.Topics = []string{}
		}
		if meta.UserData != nil {
			enc := base64.StdEncoding.EncodeToString(meta.UserData)
			s.UserData = &enc
		}
		for _, t := range meta.OwnedPartitions {
			for _, p := range t.Partitions {
				s.Owned = append(s.Owned, topicPartition{t.Topic, p})
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func run(req request, a *answer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a.OK = false
			a.Error = fmt.Sprintf("panic: %v", r)
			if len(a.Error) > 600 {
				a.Error = a.Error[:600]
			}
			err = nil
		}
	}()
	b, err := balancerFor(req.Assignor)
	if err != nil {
		return err
	}
	if req.Partitions == nil || len(req.Partitions) > maxTopics {
		return fmt.Errorf("partitions: an object of at most %d topics is required", maxTopics)
	}
	for topic, n := range req.Partitions {
		if n < 1 || n > maxPartitions {
			return fmt.Errorf("partitions.%s: expected an integer in [1, %d]", topic, maxPartitions)
		}
	}
	if len(req.Members) == 0 || len(req.Members) > maxMembers {
		return fmt.Errorf("members: between 1 and %d required", maxMembers)
	}
	members := make([]kmsg.JoinGroupResponseMember, 0, len(req.Members))
	ids := make(map[string]bool)
	for i, m := range req.Members {
		where := fmt.Sprintf("members[%d]", i)
		meta, err := metadata(b, m, where)
		if err != nil {
			return err
		}
		if ids[*m.MemberID] {
			return fmt.Errorf("%s: duplicate member_id %s", where, *m.MemberID)
		}
		ids[*m.MemberID] = true
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = *m.MemberID
		jm.ProtocolMetadata = meta
		members = append(members, jm)
	}
	// kgo balanceGroup: sortJoinMembers (no instance ids here: by member id).
	sort.Slice(members, func(i, j int) bool { return members[i].MemberID < members[j].MemberID })
	if a.Subscriptions, err = describe(members); err != nil {
		return err
	}
	mb, interests, err := b.MemberBalancer(members)
	if err != nil {
		a.Error = err.Error()
		return nil
	}
	counts := make(map[string]int32, len(interests))
	for topic := range interests {
		if n, ok := req.Partitions[topic]; ok {
			counts[topic] = n
		}
	}
	var into kgo.IntoSyncAssignment
	if withErr, ok := mb.(kgo.GroupMemberBalancerOrError); ok {
		if into, err = withErr.BalanceOrError(counts); err != nil {
			a.Error = err.Error()
			return nil
		}
	} else {
		into = mb.Balance(counts)
	}
	a.Assignment = make(map[string][]topicPartition)
	for _, sa := range into.IntoSyncAssignment() {
		var assigned kmsg.ConsumerMemberAssignment
		if err := assigned.ReadFrom(sa.MemberAssignment); err != nil {
			a.Error = fmt.Sprintf("assignment of %s does not parse: %v", sa.MemberID, err)
			a.Assignment = nil
			return nil
		}
		got := []topicPartition{}
		for _, t := range assigned.Topics {
			for _, p := range t.Partitions {
				got = append(got, topicPartition{t.Topic, p})
			}
		}
		if a.Assignment[sa.MemberID] == nil {
			a.Assignment[sa.MemberID] = []topicPartition{}
		}
		a.Assignment[sa.MemberID] = append(a.Assignment[sa.MemberID], got...)
	}
	a.OK = true
	return nil
}

func answerFor(line []byte) answer {
	var req request
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return answer{ID: req.ID, BadRequest: err.Error()}
	}
	if dec.More() {
		return answer{ID: req.ID, BadRequest: "trailing data after the request"}
	}
	a := answer{ID: req.ID}
	if err := run(req, &a); err != nil {
		return answer{ID: req.ID, BadRequest: err.Error()}
	}
	return a
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-version" {
		fmt.Println(franzVersion())
		return
	}
	out := bufio.NewWriter(os.Stdout)
	hello, _ := json.Marshal(map[string]string{
		"hello": "groupcheck-assignor-harness", "library": "franz-go", "version": franzVersion(), "api": "GroupBalancer",
	})
	out.Write(append(hello, '\n'))
	out.Flush()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64*1024), maxLine)
	for in.Scan() {
		reply, _ := json.Marshal(answerFor(in.Bytes()))
		out.Write(append(reply, '\n'))
		out.Flush()
	}
	if err := in.Err(); err != nil {
		reply, _ := json.Marshal(answer{BadRequest: "input: " + err.Error()})
		out.Write(append(reply, '\n'))
		out.Flush()
		os.Exit(1)
	}
}
