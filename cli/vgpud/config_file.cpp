#include "config_file.h"

#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <toml++/toml.h>

namespace vgpu::daemon {

namespace {

using json = nlohmann::json;

bool is_live(const std::string& key) {
  return std::find(std::begin(kLiveKeys), std::end(kLiveKeys), key) != std::end(kLiveKeys);
}

// A scalar as the command line would spell it; false for a table or array.
bool scalar_text(const toml::node& n, std::string* out) {
  if (const auto* s = n.as_string()) {
    *out = s->get();
  } else if (const auto* i = n.as_integer()) {
    *out = std::to_string(i->get());
  } else if (const auto* f = n.as_floating_point()) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", f->get());
    *out = buf;
  } else if (const auto* b = n.as_boolean()) {
    *out = b->get() ? "true" : "false";
  } else {
    return false;
  }
  return true;
}

// A scalar as JSON, for the scheduling keys' checks (scheduler_config.h).
json scalar_json(const toml::node& n) {
  if (const auto* s = n.as_string()) return s->get();
  if (const auto* i = n.as_integer()) return i->get();
  if (const auto* f = n.as_floating_point()) return f->get();
  if (const auto* b = n.as_boolean()) return b->get();
  return nullptr;  // refused by the scheduling checks, which say which key
}

json to_json(const toml::node& n) {
  if (const auto* t = n.as_table()) {
    json o = json::object();
    for (const auto& [k, v] : *t) o[std::string(k.str())] = to_json(v);
    return o;
  }
  if (const auto* a = n.as_array()) {
    json arr = json::array();
    for (const auto& v : *a) arr.push_back(to_json(v));
    return arr;
  }
  return scalar_json(n);
}

// CLI11's Config over parse_config_file.
class TomlFlagReader final : public CLI::Config {
 public:
  explicit TomlFlagReader(std::set<std::string> known) : known_(std::move(known)) {}
  std::string to_config(const CLI::App*, bool, bool, std::string) const override {
    return {};  // vgpud never writes its configuration
  }
  std::vector<CLI::ConfigItem> from_config(std::istream& in) const override {
    std::stringstream text;
    text << in.rdbuf();
    ConfigFile file;
    if (looks_like_json(text.str())) return {};  // the older scheduling file: no flags
    if (const Result r = parse_config_file(text.str(), &file); !r.ok())
      throw CLI::ConversionError(r.message());  // CLI11's way to refuse a file
    std::vector<CLI::ConfigItem> out;
    for (const auto& [name, values] : file.flags) {
      if (!known_.count(name) || name == "config" || name == "help" || name == "version") {
        throw CLI::ConversionError("'" + name + "' is no vgpud setting (vgpud --help lists them)");
      }
      CLI::ConfigItem item;
      item.name = name;
      item.inputs = values;
      out.push_back(std::move(item));
    }
    return out;
  }

 private:
  std::set<std::string> known_;
};

}  // namespace

bool looks_like_json(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{';
}

Result parse_config_file(const std::string& text, ConfigFile* out) {
  toml::table doc;
  try {
    doc = toml::parse(text);
  } catch (const toml::parse_error& e) {
    return Result::invalid_argument("not valid TOML: line " +
                                    std::to_string(e.source().begin.line) + ": " +
                                    std::string(e.description()));
  }
  ConfigFile file;
  for (const auto& [k, v] : doc) {
    const std::string key(k.str());
    if (is_live(key)) {
      // The JSON file's spelling (slice_ms), checked by parse_scheduler_config.
      std::string json_key = key;
      std::replace(json_key.begin(), json_key.end(), '-', '_');
      file.scheduling[json_key] = to_json(v);
      continue;
    }
    std::vector<std::string> values;
    std::string one;
    if (const auto* a = v.as_array()) {
      for (const auto& e : *a) {
        if (!scalar_text(e, &one)) {
          return Result::invalid_argument(
              key + ": a list of plain values (strings, numbers), not nested lists or tables");
        }
        values.push_back(one);
      }
    } else if (scalar_text(v, &one)) {
      values.push_back(one);
    } else {
      return Result::invalid_argument("[" + key +
                                      "] is no table vgpud knows (tables: weights, courses)");
    }
    file.flags[key] = std::move(values);
  }
  *out = std::move(file);
  return {};
}

Result read_config_file(const std::string& path, ConfigFile* out) {
  std::ifstream in(path);
  if (!in) return Result::unavailable("cannot read the config file " + path);
  std::stringstream text;
  text << in.rdbuf();
  if (looks_like_json(text.str())) {
    ConfigFile file;
    file.scheduling = json::parse(text.str(), nullptr, false);
    *out = std::move(file);
    return {};
  }
  if (Result r = parse_config_file(text.str(), out); !r.ok()) return r.prefixed(path + ": ");
  return {};
}

std::shared_ptr<CLI::Config> toml_flag_reader(std::set<std::string> known) {
  return std::make_shared<TomlFlagReader>(std::move(known));
}

ConfigDiff diff_flags(const ConfigFile& before, const ConfigFile& after,
                      const std::set<std::string>& known) {
  ConfigDiff d;
  for (const auto& [name, values] : after.flags) {
    if (!known.count(name)) {
      d.unknown.push_back(name);
      continue;
    }
    auto it = before.flags.find(name);
    if (it == before.flags.end() || it->second != values) d.changed.push_back(name);
  }
  for (const auto& [name, values] : before.flags) {
    if (!after.flags.count(name)) d.changed.push_back(name);
  }
  std::sort(d.changed.begin(), d.changed.end());
  return d;
}

std::set<std::string> flag_names(const CLI::App& app) {
  std::set<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) names.insert(l);
  }
  return names;
}

std::string default_config_path(const std::string& exe) {
  const std::filesystem::path prefix = std::filesystem::path(exe).parent_path().parent_path();
  const std::filesystem::path etc = prefix == "/usr" ? std::filesystem::path("/etc") : prefix / "etc";
  return (etc / "vgpu" / "vgpud.toml").string();
}

}  // namespace vgpu::daemon
