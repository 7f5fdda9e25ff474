Bej
locationmissingj
offset8j
length16p