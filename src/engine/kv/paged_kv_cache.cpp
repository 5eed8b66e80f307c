#include "engine/kv/paged_kv_cache.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

std::string windows_text(const std::vector<int32_t>& windows) {
  std::string s = "[";
  for (size_t i = 0; i < windows.size(); ++i) s += (i ? ", " : "") + std::to_string(windows[i]);
  return s + "]";
}

}  // namespace

PagedKvCache::PagedKvCache(const ModelConfig& config, const BlockManager& blocks, KvFormat format)
    : blocks_(blocks),
      groups_(config.n_layer > 0 ? KvLayerGroups::of(config) : KvLayerGroups{}),
      n_layer_(config.n_layer),
      n_slots_(groups_.slots),
      n_kv_head_(config.n_kv_head),
      head_dim_(config.head_dim),
      n_blocks_(blocks.n_blocks()),
      block_size_(blocks.block_size()),
      format_(format),
      k_head_bytes_(kv_head_bytes(format.k, config.head_dim)),
      v_head_bytes_(kv_head_bytes(format.v, config.head_dim)),
      k_block_bytes_(size_t(config.n_kv_head) * size_t(block_size_) * k_head_bytes_),
      v_block_bytes_(size_t(config.n_kv_head) * size_t(block_size_) * v_head_bytes_) {
  if (n_layer_ <= 0 || n_kv_head_ <= 0 || head_dim_ <= 0)
    throw std::invalid_argument("PagedKvCache: model config has n_layer " +
                                std::to_string(n_layer_) + ", n_kv_head " +
                                std::to_string(n_kv_head_) + ", head_dim " +
                                std::to_string(head_dim_) + "; all must be positive");
  if (groups_.windows() != blocks.group_windows())
    throw std::invalid_argument("PagedKvCache: the block manager's layer groups have windows " +
                                windows_text(blocks.group_windows()) + ", the model's " +
                                windows_text(groups_.windows()) + " (KvLayerGroups::of)");
  const size_t layer_blocks = size_t(n_slots_) * size_t(n_blocks_);
  k_ = HugePageBuffer(layer_blocks * k_block_bytes_);
  v_ = HugePageBuffer(layer_blocks * v_block_bytes_);
}

size_t PagedKvCache::block_bytes(const ModelConfig& config, int32_t block_size, KvFormat format) {
  const size_t per_position =
      kv_head_bytes(format.k, config.head_dim) + kv_head_bytes(format.v, config.head_dim);
  return size_t(KvLayerGroups::of(config).slots) * size_t(config.n_kv_head) * size_t(block_size) *
         per_position;
}

KvFormat PagedKvCache::format() const { return format_; }

size_t PagedKvCache::bytes() const { return k_.size() + v_.size(); }

size_t PagedKvCache::k_offset(int slot, BlockId block) const {
  return (size_t(slot) * size_t(n_blocks_) + size_t(block)) * k_block_bytes_;
}

size_t PagedKvCache::v_offset(int slot, BlockId block) const {
  return (size_t(slot) * size_t(n_blocks_) + size_t(block)) * v_block_bytes_;
}

BlockId PagedKvCache::block_of(int layer, int32_t seq, int32_t pos, const char* what) const {
  const int group = groups_.group_of_layer[size_t(layer)];
  const BlockId block = blocks_.block_table(seq, group)[size_t(pos / block_size_)];
  if (block == BlockManager::kNoBlock)
    throw std::out_of_range(
        std::string("PagedKvCache::") + what + ": sequence " + std::to_string(seq) + ", position " +
        std::to_string(pos) + " of layer " + std::to_string(layer) +
        " was released by its sliding window of " + std::to_string(blocks_.group_window(group)));
  check_block(block, what);
  return block;
}

void PagedKvCache::check_layer(int layer, const char* what) const {
  if (layer < 0 || layer >= n_layer_)
    throw std::out_of_range(std::string("PagedKvCache::") + what + ": layer " +
                            std::to_string(layer) + " outside [0, " + std::to_string(n_layer_) +
                            ")");
}

void PagedKvCache::check_block(BlockId block, const char* what) const {
  if (block < 0 || block >= n_blocks_)
    throw std::out_of_range(std::string("PagedKvCache::") + what + ": block " +
                            std::to_string(block) + " outside the pool [0, " +
                            std::to_string(n_blocks_) + ")");
}

void PagedKvCache::write(int layer, int32_t seq, int32_t pos, const float* k, const float* v) {
  check_layer(layer, "write");
  if (!blocks_.has_seq(seq))
    throw std::out_of_range("PagedKvCache::write: sequence " + std::to_string(seq) +
                            " has no blocks (not allocated)");
  const int32_t reserved = blocks_.seq_tokens(seq);
  if (pos < 0 || pos >= reserved)
    throw std::out_of_range("PagedKvCache::write: sequence " + std::to_string(seq) + ", position " +
                            std::to_string(pos) + " outside its " + std::to_string(reserved) +
                            " reserved positions");
  const BlockId block = block_of(layer, seq, pos, "write");
  const int slot = groups_.slot_of_layer[size_t(layer)];
  if (const int32_t rc = blocks_.refcount(block); rc != 1)
    throw std::logic_error("PagedKvCache::write: sequence " + std::to_string(seq) + ", position " +
                           std::to_string(pos) + " lies in block " + std::to_string(block) +
                           " with refcount " + std::to_string(rc) +
                           ", expected 1 (a shared block must be copied before it is written)");
  const size_t in_block = size_t(pos % block_size_);
  uint8_t* k_rec = k_.data() + k_offset(slot, block) + in_block * k_head_bytes_;
  uint8_t* v_rec = v_.data() + v_offset(slot, block) + in_block * v_head_bytes_;
  const size_t k_head_stride = size_t(block_size_) * k_head_bytes_;
  const size_t v_head_stride = size_t(block_size_) * v_head_bytes_;
  for (int h = 0; h < n_kv_head_; ++h) {
    kv_encode_head(format_.k, k + size_t(h) * size_t(head_dim_), k_rec + size_t(h) * k_head_stride,
                   head_dim_);
    kv_encode_head(format_.v, v + size_t(h) * size_t(head_dim_), v_rec + size_t(h) * v_head_stride,
                   head_dim_);
  }
}

void PagedKvCache::spans(int layer, int32_t seq, int32_t first, int32_t n,
                         std::vector<KvSpan>& out) const {
  check_layer(layer, "spans");
  if (!blocks_.has_seq(seq))
    throw std::out_of_range("PagedKvCache::spans: sequence " + std::to_string(seq) +
                            " has no blocks (not allocated)");
  const int32_t reserved = blocks_.seq_tokens(seq);
  if (n < 0 || n > reserved || first < 0 || first > n)
    throw std::out_of_range("PagedKvCache::spans: sequence " + std::to_string(seq) +
                            ": positions [" + std::to_string(first) + ", " + std::to_string(n) +
                            ") requested, " + std::to_string(reserved) + " reserved");
  const int slot = groups_.slot_of_layer[size_t(layer)];
  for (int32_t pos = first; pos < n;) {
    const BlockId block = block_of(layer, seq, pos, "spans");
    const int32_t offset = pos % block_size_;
    KvSpan span;
    span.k = k_.data() + k_offset(slot, block) + size_t(offset) * k_head_bytes_;
    span.v = v_.data() + v_offset(slot, block) + size_t(offset) * v_head_bytes_;
    span.k_pos_stride = k_head_bytes_;
    span.k_head_stride = size_t(block_size_) * k_head_bytes_;
    span.v_pos_stride = v_head_bytes_;
    span.v_head_stride = size_t(block_size_) * v_head_bytes_;
    span.n = std::min(block_size_ - offset, n - pos);
    out.push_back(span);
    pos += span.n;
  }
}

void PagedKvCache::copy_block(BlockId src, BlockId dst) {
  check_block(src, "copy_block (source)");
  check_block(dst, "copy_block (destination)");
  if (src == dst) return;
  for (int l = 0; l < n_slots_; ++l) {
    std::memcpy(k_.data() + k_offset(l, dst), k_.data() + k_offset(l, src), k_block_bytes_);
    std::memcpy(v_.data() + v_offset(l, dst), v_.data() + v_offset(l, src), v_block_bytes_);
  }
}

void PagedKvCache::export_block(BlockId block, std::span<uint8_t> out) const {
  check_block(block, "export_block");
  if (out.size() != block_bytes())
    throw std::invalid_argument("PagedKvCache::export_block: " + std::to_string(out.size()) +
                                " bytes given, a block is " + std::to_string(block_bytes()));
  uint8_t* p = out.data();
  for (int l = 0; l < n_slots_; ++l) {
    std::memcpy(p, k_.data() + k_offset(l, block), k_block_bytes_);
    std::memcpy(p + k_block_bytes_, v_.data() + v_offset(l, block), v_block_bytes_);
    p += k_block_bytes_ + v_block_bytes_;
  }
}

void PagedKvCache::import_block(BlockId block, std::span<const uint8_t> in) {
  check_block(block, "import_block");
  if (in.size() != block_bytes())
    throw std::invalid_argument("PagedKvCache::import_block: " + std::to_string(in.size()) +
                                " bytes given, a block is " + std::to_string(block_bytes()));
  const uint8_t* p = in.data();
  for (int l = 0; l < n_slots_; ++l) {
    std::memcpy(k_.data() + k_offset(l, block), p, k_block_bytes_);
    std::memcpy(v_.data() + v_offset(l, block), p + k_block_bytes_, v_block_bytes_);
    p += k_block_bytes_ + v_block_bytes_;
  }
}

}  // namespace kvforge
