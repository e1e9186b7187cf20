module github.com/ccm-conformance/ccm-conformance/driversdk

go 1.26.0
