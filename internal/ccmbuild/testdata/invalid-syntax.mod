module example.com/ccm/v2
require (
