package driver

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// config is what the driver takes from the CCM's INI cloud config: where
// the vCenter is and how to trust it, the datacenter, the tag categories of
// region and zone, and the rules by which the CCM turns a VM's guest IPs
// into node addresses. Reading the CCM's own file keeps the driver's view of
// an instance what the CCM is told.
type config struct {
	host, port     string
	user, password string
	insecure       bool
	caFile         string
	datacenters    []string
	// ipFamilies is the ip-family list as the CCM keeps it: split at
	// commas, not trimmed (pkg/common/config/config_ini_legacy.go,
	// validateIPFamily).
	ipFamilies                       []string
	regionCategory, zoneCategory     string
	internalNetwork, externalNetwork string
	internalSubnets, externalSubnets []*net.IPNet
	excludeInternal, excludeExternal []*net.IPNet
}

// iniFile is a parsed INI file: section -> key -> value. A section with a
// subsection is keyed `name "sub"` lower-cased in its name only, as gcfg
// (which the CCM reads it with) matches names case-insensitively.
type iniFile map[string]map[string]string

// parseINI reads the subset of gcfg's syntax the cloud config uses:
// [section] and [section "subsection"] headers, key = value lines with
// plain or double-quoted values, and ; or # comments.
func parseINI(text string) (iniFile, error) {
	out := iniFile{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			end := strings.LastIndexByte(line, ']')
			if end < 0 {
				return nil, fmt.Errorf("line %d: a section header without ]", n)
			}
			name, sub, hasSub := strings.Cut(strings.TrimSpace(line[1:end]), " ")
			section = strings.ToLower(name)
			if hasSub {
				s, err := strconv.Unquote(strings.TrimSpace(sub))
				if err != nil {
					return nil, fmt.Errorf("line %d: subsection %s: %w", n, sub, err)
				}
				section += " " + strconv.Quote(s)
			}
			if out[section] == nil {
				out[section] = map[string]string{}
			}
			continue
		}
		if section == "" {
			return nil, fmt.Errorf("line %d: a value outside any section", n)
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: want key = value", n)
		}
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		if strings.HasPrefix(value, `"`) {
			end := closingQuote(value)
			if end < 0 {
				return nil, fmt.Errorf("line %d: %s: an unterminated string", n, key)
			}
			s, err := strconv.Unquote(value[:end+1])
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %w", n, key, err)
			}
			value = s
		} else if i := strings.IndexAny(value, ";#"); i >= 0 {
			value = strings.TrimSpace(value[:i])
		}
		out[section][key] = value
	}
	return out, sc.Err()
}

func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// readConfig reads the cloud config at path. As the CCM does, a value of a
// [VirtualCenter] section wins over the one in [Global].
func readConfig(path string) (*config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ini, err := parseINI(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	global := ini["global"]
	var vcName string
	var vc map[string]string
	for section, values := range ini {
		if name, ok := strings.CutPrefix(section, "virtualcenter "); ok {
			if vc != nil {
				return nil, fmt.Errorf("%s: more than one [VirtualCenter]; this driver serves one vCenter", path)
			}
			vcName, _ = strconv.Unquote(name)
			vc = values
		}
	}
	get := func(key, def string) string {
		if v := vc[key]; v != "" {
			return v
		}
		if v := global[key]; v != "" {
			return v
		}
		return def
	}
	c := &config{
		host:     get("server", vcName),
		port:     get("port", "443"),
		user:     get("user", ""),
		password: get("password", ""),
		insecure: vc["insecure-flag"] == "true" || global["insecure-flag"] == "true",
		caFile:   get("ca-file", ""),
	}
	if c.host == "" {
		return nil, fmt.Errorf("%s: no vCenter: neither a [VirtualCenter] section nor [Global] server", path)
	}
	for _, dc := range strings.Split(get("datacenters", ""), ",") {
		if dc = strings.TrimSpace(dc); dc != "" {
			c.datacenters = append(c.datacenters, dc)
		}
	}
	for _, f := range strings.Split(get("ip-family", "ipv4"), ",") {
		if strings.TrimSpace(f) != "" {
			c.ipFamilies = append(c.ipFamilies, f)
		}
	}
	labels, nodes := ini["labels"], ini["nodes"]
	c.regionCategory, c.zoneCategory = labels["region"], labels["zone"]
	c.internalNetwork, c.externalNetwork = nodes["internal-vm-network-name"], nodes["external-vm-network-name"]
	for key, dst := range map[string]*[]*net.IPNet{
		"internal-network-subnet-cidr":         &c.internalSubnets,
		"external-network-subnet-cidr":         &c.externalSubnets,
		"exclude-internal-network-subnet-cidr": &c.excludeInternal,
		"exclude-external-network-subnet-cidr": &c.excludeExternal,
	} {
		if nodes[key] == "" {
			continue
		}
		for _, s := range strings.Split(nodes[key], ",") {
			_, n, err := net.ParseCIDR(s)
			if err != nil {
				return nil, fmt.Errorf("%s: [Nodes] %s: %w", path, key, err)
			}
			*dst = append(*dst, n)
		}
	}
	return c, nil
}
