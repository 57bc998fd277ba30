package storage

import (
	"os"
	"strings"
	"testing"
)

// TestDeleteLongTopicName deletes the log of a topic with the longest legal
// name (249 characters): the dir it is renamed to while it is removed must
// fit in 255 bytes, or the rename fails and the dir stays. The Manager then
// opens the dir again, also with a leftover renamed dir of that name, as a
// crash between the rename and the removal leaves it.
func TestDeleteLongTopicName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tp := TopicPartition{Topic: strings.Repeat("t", 249), Partition: 12345}
	m, err := OpenManager(DefaultManagerConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Create(tp, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(makeBatch(t, 3, 10, 1, 1, 0), AppendOptions{AssignOffsets: true}); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(tp); err != nil {
		t.Fatalf("delete the log of a 249-character topic: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// A deletion a crash interrupted after the rename.
	left := markedDirName(tp, deleteDirSuffix)
	if len(left) > maxFileNameBytes {
		t.Fatalf("renamed dir name of %d bytes", len(left))
	}
	if err := os.Mkdir(dir+"/"+left, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager(DefaultManagerConfig(dir))
	if err != nil {
		t.Fatalf("open after deleting a 249-character topic: %v", err)
	}
	defer m.Close()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			t.Errorf("dir %s left after the deletion", e.Name())
		}
	}
}
