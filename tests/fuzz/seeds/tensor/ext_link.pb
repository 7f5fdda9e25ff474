Bej
locationlinkj
offset8j
length16p