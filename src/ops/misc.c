/* Operator family 'misc': the registry rows. Kernels live in src/ops/misc_*.c:
 * sequences (misc_seq.c), SequenceMap and optionals (misc_seqmap.c), strings
 * (misc_string.c, misc_tfidf.c), DFT/STFT (misc_signal.c), windows and mel
 * filters (misc_window.c), random generators (misc_random.c). */
#include "ops/misc_impl.h"

#define STR AIT_DT_BIT(AIT_STRING)
#define TFIDF_IN (AIT_DT_BIT(AIT_STRING) | AIT_DT_BIT(AIT_INT32) | AIT_DT_BIT(AIT_INT64))
#define WIN_IN (AIT_DT_BIT(AIT_INT32) | AIT_DT_BIT(AIT_INT64))

const ait_op_def ait_ops_misc[] = {
    /* sequences: input 0 is a sequence (its dtype is the element dtype) */
    {"", "SequenceEmpty", 11, 0, ait_s_sequence_empty, ait_k_sequence_empty},
    {"", "SequenceConstruct", 11, 0, ait_s_sequence_of_in0, ait_k_sequence_construct},
    {"", "SequenceInsert", 11, 0, ait_s_sequence_of_in0, ait_k_sequence_insert},
    {"", "SequenceAt", 11, 0, ait_s_sequence_at, ait_k_sequence_at},
    {"", "SequenceErase", 11, 0, ait_s_sequence_of_in0, ait_k_sequence_erase},
    {"", "SequenceLength", 11, 0, ait_s_sequence_length, ait_k_sequence_length},
    {"", "SplitToSequence", 11, 0, ait_s_sequence_of_in0, ait_k_split_to_sequence},
    {"", "ConcatFromSequence", 11, 0, ait_s_concat_from_sequence, ait_k_concat_from_sequence},
    {"", "SequenceMap", 17, 0, ait_s_sequence_map, ait_k_sequence_map},
    /* optionals (from opset 18 Has/GetElement also take plain values: same code) */
    {"", "Optional", 15, 0, ait_s_optional, ait_k_optional},
    {"", "OptionalHasElement", 15, 0, ait_s_optional_has_element, ait_k_optional_has_element},
    {"", "OptionalGetElement", 15, 0, ait_s_optional_get_element, ait_k_optional_get_element},
    /* strings */
    {"", "StringNormalizer", 10, STR, ait_s_string_normalizer, ait_k_string_normalizer},
    {"", "StringConcat", 20, STR, ait_s_string_concat, ait_k_string_concat},
    {"", "StringSplit", 20, STR, ait_s_string_split, ait_k_string_split},
    {"", "RegexFullMatch", 20, STR, ait_s_regex_full_match, ait_k_regex_full_match},
    {"", "TfIdfVectorizer", 9, TFIDF_IN, ait_s_tfidf_vectorizer, ait_k_tfidf_vectorizer},
    /* signal: DFT-20 moves axis to input 2 (the kernel reads node->opset) */
    {"", "DFT", 17, AIT_DT_FLOATS, ait_s_dft, ait_k_dft},
    {"", "DFT", 20, AIT_DT_FLOATS, ait_s_dft, ait_k_dft},
    {"", "STFT", 17, AIT_DT_FLOATS, ait_s_stft, ait_k_stft},
    {"", "HannWindow", 17, WIN_IN, ait_s_window, ait_k_hann_window},
    {"", "HammingWindow", 17, WIN_IN, ait_s_window, ait_k_hamming_window},
    {"", "BlackmanWindow", 17, WIN_IN, ait_s_window, ait_k_blackman_window},
    {"", "MelWeightMatrix", 17, WIN_IN, ait_s_mel_weight_matrix, ait_k_mel_weight_matrix},
    /* random: never fold these into constants */
    {"", "RandomUniform", 1, 0, ait_s_random, ait_k_random_uniform},
    {"", "RandomNormal", 1, 0, ait_s_random, ait_k_random_normal},
    {"", "RandomUniformLike", 1, 0, ait_s_random_like, ait_k_random_uniform_like},
    {"", "RandomNormalLike", 1, 0, ait_s_random_like, ait_k_random_normal_like},
    {"", "Bernoulli", 15, AIT_DT_FLOATS, ait_s_random_like, ait_k_bernoulli},
};
const int ait_ops_misc_n = (int)(sizeof ait_ops_misc / sizeof ait_ops_misc[0]);
