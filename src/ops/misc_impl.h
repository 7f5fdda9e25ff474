/* Operator family 'misc': kernels and shape functions shared between
 * src/ops/misc.c (the registry rows) and the misc_*.c files that implement
 * them. Private to the family. */
#ifndef AIT_OPS_MISC_IMPL_H
#define AIT_OPS_MISC_IMPL_H

#include "ops/op.h"

#define AIT_MISC_KERNEL(fn)                                                                        \
  ait_status fn(ait_kctx *ctx, const ait_node *node, const ait_tensor *const *in, int n_in,        \
                ait_tensor **out, int n_out)
#define AIT_MISC_SHAPE(fn) ait_status fn(ait_graph *g, const ait_node *node)

/* misc_seq.c: sequences */
AIT_MISC_KERNEL(ait_k_sequence_empty);
AIT_MISC_KERNEL(ait_k_sequence_construct);
AIT_MISC_KERNEL(ait_k_sequence_insert);
AIT_MISC_KERNEL(ait_k_sequence_at);
AIT_MISC_KERNEL(ait_k_sequence_erase);
AIT_MISC_KERNEL(ait_k_sequence_length);
AIT_MISC_KERNEL(ait_k_split_to_sequence);
AIT_MISC_KERNEL(ait_k_concat_from_sequence);
AIT_MISC_SHAPE(ait_s_sequence_empty);
AIT_MISC_SHAPE(ait_s_sequence_of_in0); /* sequence of input 0's (element) dtype */
AIT_MISC_SHAPE(ait_s_sequence_at);
AIT_MISC_SHAPE(ait_s_sequence_length);
AIT_MISC_SHAPE(ait_s_concat_from_sequence);

/* misc_seqmap.c: SequenceMap and optionals */
AIT_MISC_KERNEL(ait_k_sequence_map);
AIT_MISC_KERNEL(ait_k_optional);
AIT_MISC_KERNEL(ait_k_optional_has_element);
AIT_MISC_KERNEL(ait_k_optional_get_element);
AIT_MISC_SHAPE(ait_s_sequence_map);
AIT_MISC_SHAPE(ait_s_optional);
AIT_MISC_SHAPE(ait_s_optional_has_element);
AIT_MISC_SHAPE(ait_s_optional_get_element);

/* misc_string.c: StringNormalizer; misc_tfidf.c: TfIdfVectorizer */
AIT_MISC_KERNEL(ait_k_string_normalizer);
AIT_MISC_KERNEL(ait_k_string_concat);
AIT_MISC_KERNEL(ait_k_string_split);
AIT_MISC_KERNEL(ait_k_regex_full_match);
AIT_MISC_SHAPE(ait_s_string_concat);
AIT_MISC_SHAPE(ait_s_string_split);
AIT_MISC_SHAPE(ait_s_regex_full_match);
AIT_MISC_SHAPE(ait_s_string_normalizer);
AIT_MISC_KERNEL(ait_k_tfidf_vectorizer);
AIT_MISC_SHAPE(ait_s_tfidf_vectorizer);

/* misc_signal.c: DFT, STFT */
AIT_MISC_KERNEL(ait_k_dft);
AIT_MISC_KERNEL(ait_k_stft);
AIT_MISC_SHAPE(ait_s_dft);
AIT_MISC_SHAPE(ait_s_stft);

/* misc_window.c: window functions and MelWeightMatrix */
AIT_MISC_KERNEL(ait_k_hann_window);
AIT_MISC_KERNEL(ait_k_hamming_window);
AIT_MISC_KERNEL(ait_k_blackman_window);
AIT_MISC_KERNEL(ait_k_mel_weight_matrix);
AIT_MISC_SHAPE(ait_s_window);
AIT_MISC_SHAPE(ait_s_mel_weight_matrix);

/* misc_random.c: random generators (numpy RandomState-compatible MT19937) */
AIT_MISC_KERNEL(ait_k_random_uniform);
AIT_MISC_KERNEL(ait_k_random_normal);
AIT_MISC_KERNEL(ait_k_random_uniform_like);
AIT_MISC_KERNEL(ait_k_random_normal_like);
AIT_MISC_KERNEL(ait_k_bernoulli);
AIT_MISC_SHAPE(ait_s_random);
AIT_MISC_SHAPE(ait_s_random_like);

#endif
