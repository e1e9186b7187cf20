package driver

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// config is what the driver reads of the CCM's INI cloud config
// (k8s.io/cloud-provider-aws pkg/providers/v1/config): the zone the
// region comes from, the VPC and cluster ID, and the endpoints of the
// [ServiceOverride] sections.
type config struct {
	zone, vpc, clusterID string
	// endpoints maps a service ID ("EC2", "Elastic Load Balancing") to
	// its overridden URL.
	endpoints map[string]string
}

// region is the zone without its letter, as the CCM derives it.
func (c *config) region() string {
	if c.zone == "" {
		return ""
	}
	return c.zone[:len(c.zone)-1]
}

func readConfig(path string) (*config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &config{endpoints: map[string]string{}}
	section := ""
	override := map[string]string{}
	flush := func() {
		if override["service"] != "" && override["url"] != "" {
			c.endpoints[override["service"]] = override["url"]
		}
		override = map[string]string{}
	}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, ";") || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			flush()
			section = strings.ToLower(strings.Fields(strings.Trim(line, "[]"))[0])
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: not a key = value line", path, n)
		}
		key, value = strings.ToLower(strings.TrimSpace(key)), strings.Trim(strings.TrimSpace(value), `"`)
		switch section {
		case "global":
			switch key {
			case "zone":
				c.zone = value
			case "vpc":
				c.vpc = value
			case "kubernetesclusterid":
				c.clusterID = value
			}
		case "serviceoverride":
			override[key] = value
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if c.zone == "" || c.clusterID == "" {
		return nil, fmt.Errorf("%s: [Global] needs Zone and KubernetesClusterID", path)
	}
	return c, nil
}
