for i = 1, 4000 do
  print((i % 4) .. " k" .. (i % 16) .. "," .. (i * 10))
end
-- two markers per partition far ahead: the 1e9 windows fire after every real one
for p = 0, 3 do
  print(p .. " end,1000000000")
  print(p .. " end,2000000000")
end
