package rounds

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gavelkit/gavel/policy"
)

// Server is a group of GPUs of one worker type that a multi-GPU job can use
// without crossing a network link.
type Server struct {
	WorkerType string
	GPUs       []int
}

// Topology is the physical cluster: worker types, their servers and GPU ids.
// GPU ids are assigned in sorted worker-type order, server by server, as
// Gavel registers its workers (so on v100=2,p100=2,k80=2 the k80s are 0 and 1).
// They are positions, not names: a scheduler of a real cluster keeps its own
// map from ids to machines, and when a server goes down or comes back the new
// Topology's ids of later servers and types differ from the old (see
// State.Previous).
type Topology struct {
	types   []string
	count   map[string]int
	servers map[string][]Server
	gpuType []string
	gpuSrv  []int // GPU id → server index within its type
}

// NewTopology builds the cluster from GPU counts and GPUs per server. A worker
// type missing from gpusPerServer (or a nil map) gets one GPU per server, as in
// Gavel's simulator; the last server of a type may be smaller when the count is
// not a multiple. Servers of other sizes (a GPU out of service in a middle
// server) need NewTopologyOfServers.
func NewTopology(c policy.Cluster, gpusPerServer map[string]int) (*Topology, error) {
	for w := range gpusPerServer {
		if _, ok := c[w]; !ok {
			return nil, fmt.Errorf("gpus per server: worker type %q is not in the cluster", w)
		}
	}
	sizes := map[string][]int{}
	for _, w := range c.WorkerTypes() {
		n := c[w]
		if n < 0 {
			return nil, fmt.Errorf("cluster: worker type %q: negative count %d", w, n)
		}
		per := 1
		if g, ok := gpusPerServer[w]; ok {
			if g < 1 {
				return nil, fmt.Errorf("gpus per server: worker type %q: %d must be at least 1", w, g)
			}
			per = g
		}
		sizes[w] = []int{}
		for first := 0; first < n; first += per {
			sizes[w] = append(sizes[w], min(per, n-first))
		}
	}
	return NewTopologyOfServers(sizes)
}

// NewTopologyOfServers builds the cluster from the sizes of its servers, per worker type in
// order: {"v100": {4, 3, 4}} is three v100 servers, the second with a GPU out of service. GPU
// ids follow NewTopology's order (worker types sorted, then server by server). A worker type
// with no servers (an empty list) has 0 GPUs and takes no part.
func NewTopologyOfServers(servers map[string][]int) (*Topology, error) {
	t := &Topology{count: map[string]int{}, servers: map[string][]Server{}}
	t.types = slices.Sorted(maps.Keys(servers))
	for _, w := range t.types {
		if strings.TrimSpace(w) == "" {
			return nil, errors.New("servers: an empty worker type name")
		}
		for k, size := range servers[w] {
			if size < 1 {
				return nil, fmt.Errorf("servers: worker type %q: server %d has %d GPUs; want at least 1", w, k, size)
			}
			s := Server{WorkerType: w}
			for range size {
				s.GPUs = append(s.GPUs, len(t.gpuType))
				t.gpuType = append(t.gpuType, w)
				t.gpuSrv = append(t.gpuSrv, k)
			}
			t.servers[w] = append(t.servers[w], s)
			t.count[w] += size
		}
	}
	return t, nil
}

// Cluster returns the GPU count of each worker type, as a policy takes it.
func (t *Topology) Cluster() policy.Cluster {
	c := policy.Cluster{}
	for _, w := range t.types {
		c[w] = t.count[w]
	}
	return c
}

// ParseGPUsPerServer parses "v100=4,p100=4,k80=4".
func ParseGPUsPerServer(s string) (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("gpus per server %q: entry %q: want worker_type=count", s, part)
		}
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("gpus per server %q: worker type %q: %q is not a positive integer", s, name, val)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("gpus per server %q: worker type %q given twice", s, name)
		}
		out[name] = n
	}
	return out, nil
}

// WorkerTypes returns the worker types, sorted.
func (t *Topology) WorkerTypes() []string { return append([]string(nil), t.types...) }

// Count returns the number of GPUs of worker type w.
func (t *Topology) Count(w string) int { return t.count[w] }

// NumGPUs returns the number of GPUs in the cluster.
func (t *Topology) NumGPUs() int { return len(t.gpuType) }

// Servers returns the servers of worker type w.
func (t *Topology) Servers(w string) []Server { return t.servers[w] }

// WorkerType returns the worker type of GPU id.
func (t *Topology) WorkerType(gpu int) string { return t.gpuType[gpu] }

// Server returns the index (within its worker type) of the server holding gpu.
func (t *Topology) Server(gpu int) int { return t.gpuSrv[gpu] }

// ServersSpanned returns how many distinct servers the GPUs lie on.
func (t *Topology) ServersSpanned(gpus []int) int {
	seen := map[int]bool{}
	for _, g := range gpus {
		seen[t.gpuSrv[g]] = true
	}
	return len(seen)
}

// MaxServerSize returns the size of the largest server of worker type w.
func (t *Topology) MaxServerSize(w string) int {
	m := 0
	for _, s := range t.servers[w] {
		m = max(m, len(s.GPUs))
	}
	return m
}

func sortedInts(xs []int) []int {
	out := append([]int(nil), xs...)
	sort.Ints(out)
	return out
}
