-- luacheck configuration (STYLE.md, section 5): zero warnings on lua/, tests/, examples/, bench/.
std = "luajit"
max_line_length = 100
codes = true
-- the golden scenarios copied from ../shared/scenarios are kept byte for byte
exclude_files = { "tests/scenarios/seed*/**" }
