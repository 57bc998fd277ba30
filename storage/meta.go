package storage

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Log dir identity (meta.properties), as Kafka stamps its log dirs.
//
// Every log dir holds meta.properties, a Java properties file:
//
//	#
//	#Written by Gregor
//	cluster.id=<the cluster id, 22 characters of base64url>
//	directory.id=<16 random bytes, unpadded base64url>
//	node.id=<the broker's node.id>
//	version=1
//
// The Manager reads the stamps when it opens the dirs; the broker checks
// them against its node.id and the registry's cluster id before it applies
// any metadata (Stamp). A dir stamped for another cluster or node makes the
// broker refuse to start: its logs would otherwise be taken for logs the
// metadata does not know. A dir without the file (new, or from a Gregor
// before the stamps) is stamped then.

const metaPropertiesFile = "meta.properties"

// ErrIdentityMismatch is a log dir stamped for another cluster or node.
var ErrIdentityMismatch = errors.New("storage: log dir belongs to another cluster or node")

// DirIdentity is a log dir's stamp.
type DirIdentity struct {
	ClusterID   string
	NodeID      int32
	DirectoryID string
}

// readMeta reads dir's meta.properties; ok is false when there is none.
func readMeta(dir string) (id DirIdentity, ok bool, err error) {
	path := filepath.Join(dir, metaPropertiesFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return id, false, nil
	}
	if err != nil {
		return id, false, err
	}
	id, err = parseMeta(path, data)
	return id, err == nil, err
}

// parseMeta decodes the meta.properties read from path.
func parseMeta(path string, data []byte) (id DirIdentity, err error) {
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, found := strings.Cut(line, "=")
		if !found {
			return id, fmt.Errorf("%w: %s: line %q", ErrCorruptCheckpoint, path, line)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return id, fmt.Errorf("%w: %s: %w", ErrCorruptCheckpoint, path, err)
	}
	if props["version"] != "1" {
		return id, fmt.Errorf("%w: %s: version %q, want 1", ErrCorruptCheckpoint, path, props["version"])
	}
	node, err := strconv.ParseInt(props["node.id"], 10, 32)
	if err != nil || props["cluster.id"] == "" {
		return id, fmt.Errorf("%w: %s: node.id %q, cluster.id %q", ErrCorruptCheckpoint, path, props["node.id"], props["cluster.id"])
	}
	return DirIdentity{ClusterID: props["cluster.id"], NodeID: int32(node), DirectoryID: props["directory.id"]}, nil
}

// writeMeta stamps dir with id, atomically.
func writeMeta(dir string, id DirIdentity) error {
	data := fmt.Sprintf("#\n#Written by Gregor\ncluster.id=%s\ndirectory.id=%s\nnode.id=%d\nversion=1\n",
		id.ClusterID, id.DirectoryID, id.NodeID)
	return writeFileAtomic(filepath.Join(dir, metaPropertiesFile), []byte(data))
}

func newDirectoryID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Identities returns the stamps the dirs held when the Manager opened
// them, by dir; a dir without one is not in the map.
func (m *Manager) Identities() map[string]DirIdentity {
	out := map[string]DirIdentity{}
	for _, d := range m.dirs {
		if d.meta != nil {
			out[d.path] = *d.meta
		}
	}
	return out
}

// ClusterIDOnDisk returns the cluster id the stamped dirs name ("" when no
// dir is stamped), or an error naming the dirs when they disagree.
func (m *Manager) ClusterIDOnDisk() (string, error) {
	var id, from string
	for _, d := range m.dirs {
		if d.meta == nil {
			continue
		}
		if id == "" {
			id, from = d.meta.ClusterID, d.path
		} else if d.meta.ClusterID != id {
			return "", fmt.Errorf("%w: log dir %s is stamped for cluster %s and log dir %s for cluster %s (%s); "+
				"a broker's log dirs must all belong to one cluster: take the dir of the other cluster out of log.dirs",
				ErrIdentityMismatch, from, id, d.path, d.meta.ClusterID, metaPropertiesFile)
		}
	}
	return id, nil
}

// CheckNodeID returns ErrIdentityMismatch, with a message saying what to
// do, when a dir is stamped for another node than nodeID.
func (m *Manager) CheckNodeID(nodeID int32) error {
	for _, d := range m.dirs {
		if d.meta != nil && d.meta.NodeID != nodeID {
			return fmt.Errorf("%w: log dir %s holds the logs of node %d (its %s), but this broker is node.id %d: "+
				"start it with node.id=%d, or give node %d log dirs of its own",
				ErrIdentityMismatch, d.path, d.meta.NodeID, metaPropertiesFile, nodeID, d.meta.NodeID, nodeID)
		}
	}
	return nil
}

// Stamp checks every dir's stamp against the cluster id and node id and
// stamps the dirs that have none. A dir stamped for another cluster or
// node is ErrIdentityMismatch, with a message saying what to do; then no
// dir is stamped. A dir whose stamp cannot be written goes offline.
func (m *Manager) Stamp(clusterID string, nodeID int32) error {
	if err := m.CheckNodeID(nodeID); err != nil {
		return err
	}
	for _, d := range m.dirs {
		if d.meta != nil && d.meta.ClusterID != clusterID {
			return fmt.Errorf("%w: log dir %s holds the logs of cluster %s (its %s), but the registry is cluster %s: "+
				"point the broker at that cluster's etcd (or restore its embedded etcd dir); to start over in cluster %s, "+
				"move the log dir's contents away",
				ErrIdentityMismatch, d.path, d.meta.ClusterID, metaPropertiesFile, clusterID, clusterID)
		}
	}
	for _, d := range m.dirs {
		if d.meta != nil || d.Err() != nil {
			// An offline dir is stamped at the start that finds it
			// online again.
			continue
		}
		id := DirIdentity{ClusterID: clusterID, NodeID: nodeID, DirectoryID: newDirectoryID()}
		if err := writeMeta(d.path, id); err != nil {
			// A dir that cannot take a small file (full, failing) goes
			// offline, as any I/O error takes it; the others serve.
			m.failDir(d, fmt.Errorf("write %s: %w", metaPropertiesFile, err))
			continue
		}
		d.meta = &id
	}
	return nil
}
