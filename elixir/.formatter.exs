[
  inputs: ["{mix,.formatter}.exs", "{lib,lib_nx,mix,test,test_nx}/**/*.{ex,exs}"],
  line_length: 110
]
