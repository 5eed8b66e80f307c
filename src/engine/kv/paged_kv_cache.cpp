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

std::vector<KvLayerRun> PagedKvCache::layer_runs(const ModelConfig& config,
                                                 const KvLayerGroups& groups, int32_t block_size,
                                                 KvFormat format, size_t& k_block,
                                                 size_t& v_block) {
  std::vector<KvLayerRun> runs(size_t(std::max(config.n_layer, 0)));
  k_block = v_block = 0;
  for (const KvLayerGroup& g : groups.groups) {
    size_t k_end = 0, v_end = 0;
    lay_out_runs(config, g.layers, size_t(block_size), format, runs, k_end, v_end);
    k_block = std::max(k_block, k_end);
    v_block = std::max(v_block, v_end);
  }
  return runs;
}

PagedKvCache::PagedKvCache(const ModelConfig& config, const BlockManager& blocks, KvFormat format)
    : blocks_(blocks),
      groups_(config.n_layer > 0 ? KvLayerGroups::of(config) : KvLayerGroups{}),
      n_layer_(config.n_layer),
      n_blocks_(blocks.n_blocks()),
      block_size_(blocks.block_size()),
      format_(format),
      k_block_bytes_(0),
      v_block_bytes_(0),
      export_chunks_((config.head_dim_swa > 0 && config.head_dim_swa != config.head_dim) ||
                             (config.n_kv_head_swa > 0 && config.n_kv_head_swa != config.n_kv_head)
                         ? 1
                         : groups_.slots) {
  if (n_layer_ <= 0 || config.n_kv_head <= 0 || config.head_dim <= 0)
    throw std::invalid_argument("PagedKvCache: model config has n_layer " +
                                std::to_string(n_layer_) + ", n_kv_head " +
                                std::to_string(config.n_kv_head) + ", head_dim " +
                                std::to_string(config.head_dim) + "; all must be positive");
  if (groups_.windows() != blocks.group_windows())
    throw std::invalid_argument("PagedKvCache: the block manager's layer groups have windows " +
                                windows_text(blocks.group_windows()) + ", the model's " +
                                windows_text(groups_.windows()) + " (KvLayerGroups::of)");
  layers_ = layer_runs(config, groups_, block_size_, format, k_block_bytes_, v_block_bytes_);
  k_ = HugePageBuffer(size_t(n_blocks_) * k_block_bytes_);
  v_ = HugePageBuffer(size_t(n_blocks_) * v_block_bytes_);
}

size_t PagedKvCache::block_bytes(const ModelConfig& config, int32_t block_size, KvFormat format) {
  size_t k_block = 0, v_block = 0;
  layer_runs(config, KvLayerGroups::of(config), block_size, format, k_block, v_block);
  return k_block + v_block;
}

KvFormat PagedKvCache::format() const { return format_; }

size_t PagedKvCache::bytes() const { return k_.size() + v_.size(); }

uint8_t* PagedKvCache::k_run(int layer, BlockId block) const {
  return const_cast<uint8_t*>(k_.data()) + size_t(block) * k_block_bytes_ +
         layers_[size_t(layer)].k_offset;
}

uint8_t* PagedKvCache::v_run(int layer, BlockId block) const {
  return const_cast<uint8_t*>(v_.data()) + size_t(block) * v_block_bytes_ +
         layers_[size_t(layer)].v_offset;
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
  if (const int32_t rc = blocks_.refcount(block); rc != 1)
    throw std::logic_error("PagedKvCache::write: sequence " + std::to_string(seq) + ", position " +
                           std::to_string(pos) + " lies in block " + std::to_string(block) +
                           " with refcount " + std::to_string(rc) +
                           ", expected 1 (a shared block must be copied before it is written)");
  const KvLayerRun& r = layers_[size_t(layer)];
  const size_t in_block = size_t(pos % block_size_);
  uint8_t* k_rec = k_run(layer, block) + in_block * r.k_head_bytes;
  uint8_t* v_rec = v_run(layer, block) + in_block * r.v_head_bytes;
  const size_t k_head_stride = size_t(block_size_) * r.k_head_bytes;
  const size_t v_head_stride = size_t(block_size_) * r.v_head_bytes;
  const size_t d = size_t(r.head_dim);
  for (int h = 0; h < r.n_kv_head; ++h) {
    kv_encode_head(format_.k, k + size_t(h) * d, k_rec + size_t(h) * k_head_stride, r.head_dim);
    kv_encode_head(format_.v, v + size_t(h) * d, v_rec + size_t(h) * v_head_stride, r.head_dim);
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
  const KvLayerRun& r = layers_[size_t(layer)];
  for (int32_t pos = first; pos < n;) {
    const BlockId block = block_of(layer, seq, pos, "spans");
    const int32_t offset = pos % block_size_;
    KvSpan span;
    span.k = k_run(layer, block) + size_t(offset) * r.k_head_bytes;
    span.v = v_run(layer, block) + size_t(offset) * r.v_head_bytes;
    span.k_pos_stride = r.k_head_bytes;
    span.k_head_stride = size_t(block_size_) * r.k_head_bytes;
    span.v_pos_stride = r.v_head_bytes;
    span.v_head_stride = size_t(block_size_) * r.v_head_bytes;
    span.n = std::min(block_size_ - offset, n - pos);
    out.push_back(span);
    pos += span.n;
  }
}

void PagedKvCache::copy_block(BlockId src, BlockId dst) {
  check_block(src, "copy_block (source)");
  check_block(dst, "copy_block (destination)");
  if (src == dst) return;
  std::memcpy(k_.data() + size_t(dst) * k_block_bytes_, k_.data() + size_t(src) * k_block_bytes_,
              k_block_bytes_);
  std::memcpy(v_.data() + size_t(dst) * v_block_bytes_, v_.data() + size_t(src) * v_block_bytes_,
              v_block_bytes_);
}

void PagedKvCache::export_block(BlockId block, std::span<uint8_t> out) const {
  check_block(block, "export_block");
  if (out.size() != block_bytes())
    throw std::invalid_argument("PagedKvCache::export_block: " + std::to_string(out.size()) +
                                " bytes given, a block is " + std::to_string(block_bytes()));
  const size_t k_chunk = k_block_bytes_ / size_t(export_chunks_);
  const size_t v_chunk = v_block_bytes_ / size_t(export_chunks_);
  uint8_t* p = out.data();
  for (int c = 0; c < export_chunks_; ++c) {
    std::memcpy(p, k_.data() + size_t(block) * k_block_bytes_ + size_t(c) * k_chunk, k_chunk);
    std::memcpy(p + k_chunk, v_.data() + size_t(block) * v_block_bytes_ + size_t(c) * v_chunk,
                v_chunk);
    p += k_chunk + v_chunk;
  }
}

void PagedKvCache::import_block(BlockId block, std::span<const uint8_t> in) {
  check_block(block, "import_block");
  if (in.size() != block_bytes())
    throw std::invalid_argument("PagedKvCache::import_block: " + std::to_string(in.size()) +
                                " bytes given, a block is " + std::to_string(block_bytes()));
  const size_t k_chunk = k_block_bytes_ / size_t(export_chunks_);
  const size_t v_chunk = v_block_bytes_ / size_t(export_chunks_);
  const uint8_t* p = in.data();
  for (int c = 0; c < export_chunks_; ++c) {
    std::memcpy(k_.data() + size_t(block) * k_block_bytes_ + size_t(c) * k_chunk, p, k_chunk);
    std::memcpy(v_.data() + size_t(block) * v_block_bytes_ + size_t(c) * v_chunk, p + k_chunk,
                v_chunk);
    p += k_chunk + v_chunk;
  }
}

}  // namespace kvforge
