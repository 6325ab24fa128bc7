#!/bin/bash
# Keeps cargo-afl's instrumentation and optimisation only for the crates the fuzz targets run
# (Gleaner, the harness, and the parsers); the GUI stack is built at opt-level 0 without
# coverage, which a 2-core machine builds several times faster.
rustc="$1"; shift
name=""
prev=""
for a in "$@"; do
  if [ "$prev" = "--crate-name" ]; then name="$a"; break; fi
  prev="$a"
done
keep=" gleaner gleaner_fuzz afl intake retry_after html pdf build_script_build adler2 adobe_cmap_parser aes bit_set bit_vec cbc cff_parser chardetng cipher crc32fast cssparser dom_query dom_smoothie dtoa dtoa_short ecb encoding_rs euclid flate2 foldhash form_urlencoded gjson hashbrown html_escape html5ever httpdate icu_collections icu_locale_core icu_normalizer icu_normalizer_data icu_properties icu_properties_data icu_provider idna idna_adapter indexmap itoa litemap lopdf markup5ever memchr miniz_oxide nom num_traits pdf_extract percent_encoding phf phf_shared pom postscript potential_utf precomputed_hash rangemap rustc_hash selectors servo_arc sha2 simd_adler32 siphasher smallvec stable_deref_trait string_cache stringprep tendril tinystr tinyvec ttf_parser type1_encoding_parser unicode_bidi unicode_normalization unicode_properties unicode_segmentation url utf8_iter utf_types web_atoms weezl writeable yoke zerofrom zerotrie zerovec md_5 block_buffer digest generic_array crypto_common inout block_padding typenum "
case "$keep" in
  *" $name "*) exec "$rustc" "$@" ;;
esac
out=()
skip=0
for a in "$@"; do
  if [ $skip = 1 ]; then
    skip=0
    case "$a" in
      opt-level=*|codegen-units=*|passes=sancov-module|target-cpu=*) continue ;;
      llvm-args=-sanitizer-coverage*) continue ;;
      *) out+=("-C" "$a"); continue ;;
    esac
  fi
  if [ "$a" = "-C" ]; then skip=1; continue; fi
  case "$a" in
    -Copt-level=*|-Ccodegen-units=*) continue ;;
  esac
  out+=("$a")
done
exec "$rustc" "${out[@]}" -C opt-level=0
