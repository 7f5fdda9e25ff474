/* The library functions a backend plugin calls, one row each (an X-macro
 * list: plugin.h turns it into the fields of ait_plugin_host, loader.c into
 * that table's values, shim.c into the plugin's definitions that call
 * through it). A plugin is linked with -z defs, so a function it starts to
 * use that is not listed here fails its link, naming the function: add its
 * row here (the declaration it is checked against comes from the headers
 * plugin.h includes). ait_err and ait_err_prefix are variadic and have
 * their own fields in plugin.h.
 *
 *   AIT_HOST_FN(return type, name, (parameters), (arguments))
 *   AIT_HOST_VOID(name, (parameters), (arguments))            void functions */

/* core: errors, dtypes, tensors, files */
AIT_HOST_VOID(ait_err_clear, (void), ())
AIT_HOST_FN(const char *, ait_last_error, (void), ())
AIT_HOST_FN(const char *, ait_dtype_name, (ait_dtype dtype), (dtype))
AIT_HOST_FN(const ait_dtype_traits *, ait_dtype_traits_of, (ait_dtype dt), (dt))
AIT_HOST_FN(uint16_t, ait_f32_to_bf16, (float f), (f))
AIT_HOST_FN(uint16_t, ait_f32_to_f16, (float f), (f))
AIT_HOST_FN(size_t, ait_elem_size, (ait_dtype dt), (dt))
AIT_HOST_FN(uint8_t, ait_e4m3_encode, (float x), (x))
AIT_HOST_FN(int64_t, ait_shape_numel, (int rank, const int64_t *dims), (rank, dims))
AIT_HOST_FN(const char *, ait_shape_str, (int rank, const int64_t *dims, char *buf, size_t n),
            (rank, dims, buf, n))
AIT_HOST_VOID(ait_shape_strides, (int rank, const int64_t *dims, int64_t *strides),
              (rank, dims, strides))
AIT_HOST_FN(ait_tensor *, ait_tensor_new, (ait_dtype dt, int rank, const int64_t *dims),
            (dt, rank, dims))
AIT_HOST_FN(ait_tensor *, ait_tensor_wrap,
            (ait_dtype dt, int rank, const int64_t *dims, void *data), (dt, rank, dims, data))
AIT_HOST_FN(ait_tensor *, ait_tensor_clone, (const ait_tensor *t), (t))
AIT_HOST_VOID(ait_tensor_free, (ait_tensor * t), (t))
AIT_HOST_FN(char *, ait_path_join, (const char *dir, const char *name), (dir, name))
AIT_HOST_FN(ait_status, ait_read_file, (const char *path, void **data, size_t *size),
            (path, data, size))
AIT_HOST_FN(ait_status, ait_write_file_atomic, (const char *path, const void *data, size_t size),
            (path, data, size))

/* the saved-state format (backends/common/state_io.h) */
AIT_HOST_VOID(ait_state_out_init, (ait_state_out * o, const char *owner, uint32_t version),
              (o, owner, version))
AIT_HOST_VOID(ait_state_out_section, (ait_state_out * o, const char *name), (o, name))
AIT_HOST_VOID(ait_state_out_put, (ait_state_out * o, const void *data, size_t n), (o, data, n))
AIT_HOST_FN(ait_status, ait_state_out_save, (ait_state_out * o, const char *path), (o, path))
AIT_HOST_VOID(ait_state_out_free, (ait_state_out * o), (o))
AIT_HOST_FN(ait_status, ait_state_open,
            (ait_state_in * in, const char *path, const char *owner, uint32_t version),
            (in, path, owner, version))
AIT_HOST_FN(ait_status, ait_state_section, (ait_state_in * in, const char *name, ait_state_rd *r),
            (in, name, r))
AIT_HOST_FN(ait_status, ait_state_close, (ait_state_in * in, ait_status st), (in, st))
AIT_HOST_FN(ait_status, ait_state_corrupt, (const ait_state_rd *r, const char *what), (r, what))

/* the IR */
AIT_HOST_FN(float, ait_attr_float, (const ait_node *n, const char *name, float def), (n, name, def))
AIT_HOST_FN(int64_t, ait_attr_int, (const ait_node *n, const char *name, int64_t def),
            (n, name, def))
AIT_HOST_FN(const int64_t *, ait_attr_ints, (const ait_node *n, const char *name, int *count),
            (n, name, count))
AIT_HOST_FN(const char *, ait_attr_str, (const ait_node *n, const char *name, const char *def),
            (n, name, def))
AIT_HOST_FN(const ait_tensor *, ait_attr_tensor, (const ait_node *n, const char *name), (n, name))
AIT_HOST_FN(ait_node *, ait_graph_add_node,
            (ait_graph * g, const char *name, const char *op_type, const char *domain),
            (g, name, op_type, domain))
AIT_HOST_FN(int, ait_graph_add_value, (ait_graph * g, const char *name), (g, name))
AIT_HOST_FN(int, ait_graph_find_value, (const ait_graph *g, const char *name), (g, name))
AIT_HOST_VOID(ait_graph_free, (ait_graph * g), (g))
AIT_HOST_FN(int64_t, ait_graph_opset, (const ait_graph *g, const char *domain), (g, domain))
AIT_HOST_FN(const char *, ait_node_desc, (const ait_node *n), (n))
AIT_HOST_FN(ait_status, ait_onnx_load_saved_graph,
            (const char *dir, const char *file, const ait_graph *model, ait_graph **out),
            (dir, file, model, out))
AIT_HOST_FN(ait_status, ait_onnx_write_model, (const ait_graph *g, const char *path), (g, path))

/* operators, the reference executor, the profiler's observer */
AIT_HOST_FN(ait_status, ait_act_parse, (const ait_node *n, ait_act *a), (n, a))
AIT_HOST_FN(const char *, ait_act_name, (ait_act_kind k), (k))
AIT_HOST_FN(bool, ait_match_gelu, (const ait_match_view *v, int x, ait_gelu_match *m), (v, x, m))
AIT_HOST_FN(bool, ait_match_attention, (const ait_match_view *v, int softmax, ait_attn_match *m),
            (v, softmax, m))
AIT_HOST_FN(bool, ait_match_silu, (const ait_match_view *v, int x, ait_silu_match *m), (v, x, m))
AIT_HOST_FN(bool, ait_match_hard_swish, (const ait_match_view *v, int add, ait_hard_swish_match *m),
            (v, add, m))
AIT_HOST_FN(const ait_op_def *, ait_op_lookup,
            (const char *domain, const char *name, int64_t opset, const char **why),
            (domain, name, opset, why))
AIT_HOST_FN(ait_status, ait_norm_axis, (int64_t axis, int rank, int *out), (axis, rank, out))
AIT_HOST_FN(ait_status, ait_read_ints, (const ait_tensor *t, int64_t *vals, int max, int *n),
            (t, vals, max, n))
AIT_HOST_FN(double, ait_scalar_f64, (const ait_tensor *t), (t))
AIT_HOST_FN(int64_t, ait_scalar_i64, (const ait_tensor *t), (t))
AIT_HOST_FN(ait_status, ait_eager_run_node,
            (const ait_node *n, const ait_tensor *const *in, int n_in, ait_tensor **out),
            (n, in, n_in, out))
AIT_HOST_FN(bool, ait_observing, (void), ())
AIT_HOST_VOID(ait_observe_node, (const ait_node *node, double seconds), (node, seconds))

/* backend configurations */
AIT_HOST_FN(ait_status, ait_backend_config_parse, (const char *spec, ait_backend_config *cfg),
            (spec, cfg))
AIT_HOST_FN(const char *, ait_backend_config_get, (const ait_backend_config *cfg, const char *key),
            (cfg, key))
AIT_HOST_FN(int64_t, ait_backend_config_int,
            (const ait_backend_config *cfg, const char *key, int64_t def), (cfg, key, def))

/* native's graph passes and planner */
AIT_HOST_FN(int, nat_add_initializer,
            (ait_graph * g, const char *base, const char *suffix, ait_tensor *t),
            (g, base, suffix, t))
AIT_HOST_FN(ait_status, nat_attr_set_int, (ait_node * n, const char *name, int64_t v), (n, name, v))
AIT_HOST_FN(ait_status, nat_attr_set_str, (ait_node * n, const char *name, const char *v),
            (n, name, v))
AIT_HOST_FN(ait_status, nat_node_make_fused, (ait_node * n, const char *op), (n, op))
AIT_HOST_FN(ait_graph *, nat_graph_clone, (const ait_graph *g, ait_graph *parent, bool borrow),
            (g, parent, borrow))
AIT_HOST_FN(ait_status, nat_graph_compact, (ait_graph * g, const bool *dead), (g, dead))
AIT_HOST_FN(ait_status, ait_plan_assign,
            (int n_values, const int64_t *size, const int *first, const int *last, int64_t *offset,
             int64_t *total),
            (n_values, size, first, last, offset, total))
AIT_HOST_FN(ait_status, nat_resolve_fused, (ait_graph * g), (g))
AIT_HOST_FN(ait_status, nat_run_passes_for,
            (ait_graph * g, nat_pass_stats *stats, bool attention, const nat_accepts *acc),
            (g, stats, attention, acc))
AIT_HOST_FN(ait_status, nat_pass_groupnorm, (ait_graph * g, int *fused), (g, fused))
AIT_HOST_FN(uint64_t, ait_plan_signature,
            (const ait_tensor *const *in, int n_in, int64_t *sig, int *n_sig),
            (in, n_in, sig, n_sig))
AIT_HOST_VOID(nat_uses_free, (nat_uses * u), (u))
AIT_HOST_FN(ait_status, nat_uses_refresh, (nat_uses * u), (u))
