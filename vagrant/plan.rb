# The multi-VM lab's plan from a lab topology (lab/src/topologies/*.yaml): the networks, and per machine its
# cluster, whether it runs the cluster's controller, and its two NICs with their MACs and addresses. It is
# `strait-lab plan` written again in Ruby because the Vagrantfile needs it before any VM (or Node.js) exists;
# test/vagrant/plan.test.ts checks that the two agree on every topology of the repository.
#
# The rules (lab/src/topology.ts parseTopology; vagrant/README.md): machines in topology order
# (clusters, then their nodes), numbered i = 1, 2, ... over all machines; MAC 52:54:00:5a:<i>:00 for ul0
# (the cluster's underlay) and :01 for pub0 (the public network); the underlay address is host (node index
# in its cluster + 1), the public one host 10 x (cluster index + 1) + node index + 1; the first node of a
# cluster runs its controller; a cluster has at most 9 nodes (its decade of public addresses).
#
# Only what the plan reads is checked here (public, mtu, the clusters' id and underlay, the nodes' names);
# `strait-lab up` parses the whole topology on every machine. Ruby's standard library only.
require 'ipaddr'
require 'json'
require 'yaml'

module StraitPlan
  # Bad input, worded as Strait's InputError: "field: reason (got value)".
  class Error < StandardError
    attr_reader :field, :value

    def initialize(field, value, reason)
      @field = field
      @value = value
      super("#{field}: #{reason} (got #{JSON.generate(value, quirks_mode: true)})")
    end
  end

  DEFAULT_MTU = 1500
  MTU_RANGE = (1280..9000).freeze
  # The lab's own name rules (src/api/formats.ts): a cluster id is a DNS-1123 label, a lab name is short
  # because interface and namespace names are derived from it.
  CLUSTER_ID = /\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\z/.freeze
  LAB_NAME = /\A[a-z][a-z0-9-]{0,10}\z/.freeze
  # The MAC's fifth byte numbers the machine.
  MAX_MACHINES = 255
  # A cluster's public addresses are a decade of their own: 11-19 for the first cluster, 21-29...
  MAX_NODES = 9

  module_function

  def load(path)
    text = File.read(path)
    doc = begin
      YAML.safe_load(text, filename: path)
    rescue Psych::SyntaxError => e
      raise Error.new('topology', path, "is not YAML: #{e.message}")
    end
    derive(doc)
  end

  # The plan of a topology document (a Hash as YAML gives it), with string keys as `strait-lab plan` prints.
  def derive(doc)
    raise Error.new('topology', doc, 'expected a mapping') unless doc.is_a?(Hash)

    public_net = cidr('public', doc['public'])
    mtu = doc.fetch('mtu', DEFAULT_MTU)
    unless mtu.is_a?(Integer) && MTU_RANGE.cover?(mtu)
      raise Error.new('mtu', mtu, "must be an integer from #{MTU_RANGE.min} to #{MTU_RANGE.max}")
    end
    clusters = list('clusters', doc['clusters'])
    seen = {}
    unique = lambda do |field, name|
      raise Error.new(field, name, 'is used twice (node, pod and cluster names share one namespace)') if seen[name]

      seen[name] = true
    end
    networks = [{ 'name' => 'public', 'cidr' => format_cidr(public_net) }]
    machines = []
    clusters.each_with_index do |c, ci|
      f = "clusters[#{ci}]"
      raise Error.new(f, c, 'expected a mapping') unless c.is_a?(Hash)

      id = name("#{f}.id", c['id'], CLUSTER_ID, 'a cluster id is 1 to 63 lowercase letters, digits or "-", starting and ending with a letter or digit')
      unique.call("#{f}.id", id)
      underlay = cidr("#{f}.underlay", c['underlay'])
      network = "underlay-#{id}"
      networks << { 'name' => network, 'cidr' => format_cidr(underlay) }
      nodes = list("#{f}.nodes", c['nodes'])
      raise Error.new("#{f}.nodes", nodes, 'expected at least 1 item') if nodes.empty?
      if nodes.size > MAX_NODES
        raise Error.new("#{f}.nodes", nodes.size, "expected at most #{MAX_NODES} items: each cluster numbers its nodes' public addresses in a decade of its own")
      end

      nodes.each_with_index do |n, ni|
        nf = "#{f}.nodes[#{ni}]"
        raise Error.new(nf, n, 'expected a mapping') unless n.is_a?(Hash)

        node = name("#{nf}.name", n['name'], LAB_NAME, 'must be 1-11 characters: a-z, 0-9, -, starting with a letter')
        unique.call("#{nf}.name", node)
        list("#{nf}.pods", n.fetch('pods', [])).each_with_index do |p, pi|
          unique.call("#{nf}.pods[#{pi}]", name("#{nf}.pods[#{pi}]", p, LAB_NAME, 'must be 1-11 characters: a-z, 0-9, -, starting with a letter'))
        end
        i = machines.size + 1
        raise Error.new(nf, node, "is machine #{i}: a plan has at most #{MAX_MACHINES} (one MAC byte numbers them)") if i > MAX_MACHINES

        machines << {
          'name' => node,
          'cluster' => id,
          'controller' => ni.zero?,
          'nics' => [
            nic('ul0', network, mac(i, 0), host("#{f}.underlay", underlay, ni + 1)),
            nic('pub0', 'public', mac(i, 1), host('public', public_net, 10 * (ci + 1) + ni + 1)),
          ],
        }
      end
    end
    { 'mtu' => mtu, 'networks' => networks, 'machines' => machines }
  end

  def nic(name, network, mac, address)
    { 'name' => name, 'network' => network, 'mac' => mac, 'address' => address }
  end

  def mac(machine, port)
    format('52:54:00:5a:%02x:%02x', machine, port)
  end

  def list(field, value)
    raise Error.new(field, value, 'expected a list') unless value.is_a?(Array)

    value
  end

  def name(field, value, pattern, reason)
    raise Error.new(field, value, reason) unless value.is_a?(String) && pattern.match?(value)

    value
  end

  # A network with its host bits clear, refused as src/net/cidr.ts parseCidr refuses it.
  def cidr(field, text)
    raise Error.new(field, text, 'expected a CIDR string like 10.0.0.0/16') unless text.is_a?(String)

    m = %r{\A([^/]+)/(\d{1,3})\z}.match(text)
    raise Error.new(field, text, 'expected a CIDR like 10.0.0.0/16 or fd00::/64') unless m

    ip = begin
      IPAddr.new(m[1])
    rescue IPAddr::Error
      raise Error.new(field, text, 'the address part is not an IPv4 address (a.b.c.d, no leading zeros) nor an IPv6 address')
    end
    bits = ip.ipv4? ? 32 : 128
    prefix = m[2].to_i
    unless prefix.between?(1, bits) && prefix.to_s == m[2]
      raise Error.new(field, text, "prefix length must be 1 to #{bits} for IPv#{ip.ipv4? ? 4 : 6}")
    end

    network = ip.mask(prefix)
    raise Error.new(field, text, "host bits are set; did you mean #{network}/#{prefix}?") unless network == ip

    network
  end

  def format_cidr(net)
    "#{net}/#{net.prefix}"
  end

  # The n-th host of a network (n from 1) with the network's prefix length; refused when it does not fit.
  def host(field, net, n)
    size = 2**((net.ipv4? ? 32 : 128) - net.prefix)
    raise Error.new(field, format_cidr(net), "is too small for #{n} hosts") if n >= size - 1

    "#{IPAddr.new(net.to_i + n, net.family)}/#{net.prefix}"
  end
end

if $PROGRAM_NAME == __FILE__
  abort('usage: ruby vagrant/plan.rb TOPOLOGY.yaml') unless ARGV.size == 1
  begin
    puts JSON.pretty_generate(StraitPlan.load(ARGV[0]))
  rescue StraitPlan::Error, SystemCallError => e
    abort("#{ARGV[0]}: #{e.message}")
  end
end
