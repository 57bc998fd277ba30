package main

import (
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/cobra"
)

// newClusterCmd returns `gregor cluster` and its subcommands.
func newClusterCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the cluster; move replicas between its brokers (rebalance, decommission)",
		Args:  cobra.NoArgs,
	}
	o.addFlags(cmd)
	o.addTimeoutFlag(cmd)
	cmd.AddCommand(newClusterInfoCmd(o), newClusterRebalanceCmd(o), newClusterDecommissionCmd(o), newClusterReassignmentsCmd(o))
	return cmd
}

// clusterInfo is what `cluster info` shows.
type clusterInfo struct {
	ClusterID  string       `json:"cluster_id"`
	Controller int32        `json:"controller"`
	Brokers    []brokerInfo `json:"brokers"`
}

type brokerInfo struct {
	ID   int32   `json:"id"`
	Host string  `json:"host"`
	Port int32   `json:"port"`
	Rack *string `json:"rack"`
	// Configs, with --configs, are all the broker's configs.
	Configs []configEntry `json:"configs,omitempty"`
}

func newClusterInfoCmd(o *clientOptions) *cobra.Command {
	var withConfigs bool
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show the cluster id, the controller and the brokers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := o.newAdmin(cmd)
			if err != nil {
				return err
			}
			defer a.close()
			md, err := a.BrokerMetadata(a.ctx)
			if err != nil {
				return fmt.Errorf("cluster metadata: %w", err)
			}
			info := clusterInfo{ClusterID: md.Cluster, Controller: md.Controller, Brokers: []brokerInfo{}}
			for _, b := range md.Brokers {
				info.Brokers = append(info.Brokers, brokerInfo{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
			}
			if withConfigs {
				for i, b := range info.Brokers {
					rcs, err := a.DescribeBrokerConfigs(a.ctx, b.ID)
					if err != nil {
						return fmt.Errorf("configs of broker %d: %w", b.ID, err)
					}
					for _, rc := range rcs {
						if err := kafkaErr(rc.Err, rc.ErrMessage); err != nil {
							return fmt.Errorf("configs of broker %d: %w", b.ID, err)
						}
						info.Brokers[i].Configs = append(info.Brokers[i].Configs, configEntries(rc.Configs, nil)...)
					}
				}
			}
			if o.json {
				return writeJSON(cmd.OutOrStdout(), info)
			}
			return printClusterInfo(cmd, info)
		},
	}
	cmd.Flags().BoolVar(&withConfigs, "configs", false, "also show each broker's configs and where their values come from")
	return cmd
}

func printClusterInfo(cmd *cobra.Command, info clusterInfo) error {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Cluster ID: %s\nController: %d\n\n", orDash(info.ClusterID), info.Controller)
	tb := newTable(w, "BROKER", "ADDRESS", "RACK", "CONTROLLER")
	for _, b := range info.Brokers {
		rack, ctl := "-", ""
		if b.Rack != nil && *b.Rack != "" {
			rack = *b.Rack
		}
		if b.ID == info.Controller {
			ctl = "yes"
		}
		tb.row(b.ID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), rack, ctl)
	}
	if err := tb.flush(); err != nil {
		return err
	}
	for _, b := range info.Brokers {
		if len(b.Configs) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nConfigs of broker %d:\n", b.ID)
		tb := newTable(w, "NAME", "VALUE", "SOURCE")
		for _, c := range b.Configs {
			tb.row(c.Name, c.valueString(), c.Source)
		}
		if err := tb.flush(); err != nil {
			return err
		}
	}
	return nil
}
