package router_test

// The package mirrors the installed headers whole: every enumerator and
// numeric #define as a Go constant of the same value, every status with its
// name and sentinel error, every struct field as a field of a Go type, every
// function by a Go function or method that calls it. The header's side
// comes from packaging/c/header_facts.py, which reads the names from the
// headers and the values from a C compiler, so a status, field or function
// added to a header fails this test until it is mirrored here.

import (
	"errors"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	router "github.com/alphamoe/alphamoe-router/packaging/go"
)

type headerFacts struct {
	enums     map[string]map[string]int64 // enum type -> enumerator -> value
	defines   map[string]int64
	fields    map[string]bool // "struct.field"
	functions map[string]bool
}

func readHeaderFacts(t *testing.T) headerFacts {
	t.Helper()
	cmd := exec.Command("python3", "../c/header_facts.py")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("packaging/c/header_facts.py: %v\n%s", err, stderr.String())
	}
	f := headerFacts{map[string]map[string]int64{}, map[string]int64{}, map[string]bool{}, map[string]bool{}}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		w := strings.Fields(line)
		value := func(i int) int64 {
			v, err := strconv.ParseInt(w[i], 10, 64)
			if err != nil {
				t.Fatalf("bad line %q", line)
			}
			return v
		}
		switch w[0] {
		case "enum":
			if f.enums[w[1]] == nil {
				f.enums[w[1]] = map[string]int64{}
			}
			f.enums[w[1]][w[2]] = value(3)
		case "define":
			f.defines[w[1]] = value(2)
		case "field":
			f.fields[w[1]] = true
		case "function":
			f.functions[w[1]] = true
		case "struct":
		default:
			t.Fatalf("unknown line %q", line)
		}
	}
	if len(f.enums) == 0 || len(f.fields) == 0 || len(f.functions) == 0 {
		t.Fatal("header_facts printed nothing")
	}
	return f
}

// statuses: every alphamoe_status with its Go constant and sentinel.
var statuses = map[string]struct {
	status   router.Status
	sentinel error
}{
	"ALPHAMOE_OK":                        {router.StatusOK, nil},
	"ALPHAMOE_ERROR_NULL_POINTER":        {router.StatusNullPointer, router.ErrNullPointer},
	"ALPHAMOE_ERROR_STRUCT_SIZE":         {router.StatusStructSize, router.ErrStructSize},
	"ALPHAMOE_ERROR_NUM_EXPERTS":         {router.StatusNumExperts, router.ErrNumExperts},
	"ALPHAMOE_ERROR_TOP_K":               {router.StatusTopK, router.ErrTopK},
	"ALPHAMOE_ERROR_BLOCK_M":             {router.StatusBlockM, router.ErrBlockM},
	"ALPHAMOE_ERROR_MAX_TOKENS":          {router.StatusMaxTokens, router.ErrMaxTokens},
	"ALPHAMOE_ERROR_NUM_TOKENS":          {router.StatusNumTokens, router.ErrNumTokens},
	"ALPHAMOE_ERROR_SHARED_EXPERT":       {router.StatusSharedExpert, router.ErrSharedExpert},
	"ALPHAMOE_ERROR_ROW_STRIDE":          {router.StatusRowStride, router.ErrRowStride},
	"ALPHAMOE_ERROR_FLAGS":               {router.StatusFlags, router.ErrFlags},
	"ALPHAMOE_ERROR_SPECIALIZATION":      {router.StatusSpecialization, router.ErrSpecialization},
	"ALPHAMOE_ERROR_ALIGNMENT":           {router.StatusAlignment, router.ErrAlignment},
	"ALPHAMOE_ERROR_CAPACITY":            {router.StatusCapacity, router.ErrCapacity},
	"ALPHAMOE_ERROR_WORKSPACE":           {router.StatusWorkspace, router.ErrWorkspace},
	"ALPHAMOE_ERROR_NO_DRIVER":           {router.StatusNoDriver, router.ErrNoDriver},
	"ALPHAMOE_ERROR_NO_DEVICE":           {router.StatusNoDevice, router.ErrNoDevice},
	"ALPHAMOE_ERROR_NO_IMAGE":            {router.StatusNoImage, router.ErrNoImage},
	"ALPHAMOE_ERROR_UNSUPPORTED_DEVICE":  {router.StatusUnsupportedDevice, router.ErrUnsupportedDevice},
	"ALPHAMOE_ERROR_CUDA":                {router.StatusCUDA, router.ErrCUDA},
	"ALPHAMOE_ERROR_OUT_OF_MEMORY":       {router.StatusOutOfMemory, router.ErrOutOfMemory},
	"ALPHAMOE_ERROR_INVALID_ARGUMENT":    {router.StatusInvalidArgument, router.ErrInvalidArgument},
	"ALPHAMOE_ERROR_SCORING":             {router.StatusScoring, router.ErrScoring},
	"ALPHAMOE_ERROR_LOGITS_TYPE":         {router.StatusLogitsType, router.ErrLogitsType},
	"ALPHAMOE_ERROR_GROUPS":              {router.StatusGroups, router.ErrGroups},
	"ALPHAMOE_ERROR_SCALING_FACTOR":      {router.StatusScalingFactor, router.ErrScalingFactor},
	"ALPHAMOE_ERROR_EXPERT_PARALLEL":     {router.StatusExpertParallel, router.ErrExpertParallel},
	"ALPHAMOE_ERROR_UNSUPPORTED_FLAVOUR": {router.StatusUnsupportedFlavour, router.ErrUnsupportedFlavour},
	"ALPHAMOE_ERROR_INVALID_HANDLE":      {router.StatusInvalidHandle, router.ErrInvalidHandle},
	"ALPHAMOE_ERROR_HASH_ROUTING":        {router.StatusHashRouting, router.ErrHashRouting},
	"ALPHAMOE_ERROR_REDUNDANT_EXPERTS":   {router.StatusRedundantExperts, router.ErrRedundantExperts},
}

// constants: every other enumerator and #define with its Go constant.
var constants = map[string]int64{
	"ALPHAMOE_SCORING_SOFTMAX":        int64(router.ScoringSoftmax),
	"ALPHAMOE_SCORING_SIGMOID":        int64(router.ScoringSigmoid),
	"ALPHAMOE_SCORING_SQRT_SOFTPLUS":  int64(router.ScoringSqrtSoftplus),
	"ALPHAMOE_LOGITS_F32":             int64(router.LogitsF32),
	"ALPHAMOE_LOGITS_BF16":            int64(router.LogitsBF16),
	"ALPHAMOE_LOGITS_F16":             int64(router.LogitsF16),
	"ALPHAMOE_SPECIALIZATION_AUTO":    int64(router.SpecializationAuto),
	"ALPHAMOE_SPECIALIZATION_TINY":    int64(router.SpecializationTiny),
	"ALPHAMOE_SPECIALIZATION_SMALL":   int64(router.SpecializationSmall),
	"ALPHAMOE_SPECIALIZATION_LARGE":   int64(router.SpecializationLarge),
	"ALPHAMOE_MAX_EXPERTS":            router.MaxExperts,
	"ALPHAMOE_MAX_TOP_K":              router.MaxTopK,
	"ALPHAMOE_MAX_BLOCK_M":            router.MaxBlockM,
	"ALPHAMOE_FLAG_SHARED_EXPERT":     int64(router.FlagSharedExpert),
	"ALPHAMOE_FLAG_TAIL_FILL":         int64(router.FlagTailFill),
	"ALPHAMOE_FLAG_PDL":               int64(router.FlagPDL),
	"ALPHAMOE_FLAG_NO_RENORMALIZE":    int64(router.FlagNoRenormalize),
	"ALPHAMOE_FLAG_CORRECTION_BIAS":   int64(router.FlagCorrectionBias),
	"ALPHAMOE_FLAG_EXPERT_MAP":        int64(router.FlagExpertMap),
	"ALPHAMOE_FLAG_HASH_ROUTING":      int64(router.FlagHashRouting),
	"ALPHAMOE_FLAG_REDUNDANT_EXPERTS": int64(router.FlagRedundantExperts),
	"ALPHAMOE_FLAG_ALL":               int64(router.FlagAll),
}

// fields: every struct field with the Go field that carries it ("" for
// struct_size and reserved, which the package sets itself, and the extent's
// halves, which Sizes gives as element counts and workspace bytes).
var fields = map[string]string{
	"alphamoe_params.struct_size":                        "",
	"alphamoe_params.num_experts":                        "Params.NumExperts",
	"alphamoe_params.top_k":                              "Params.TopK",
	"alphamoe_params.block_m":                            "Params.BlockM",
	"alphamoe_params.max_tokens":                         "Params.MaxTokens",
	"alphamoe_params.logits_row_stride":                  "Params.LogitsRowStride",
	"alphamoe_params.flags":                              "Params.Flags",
	"alphamoe_params.force_specialization":               "Params.ForceSpecialization",
	"alphamoe_params.scoring":                            "Params.Scoring",
	"alphamoe_params.logits_type":                        "Params.LogitsType",
	"alphamoe_params.num_groups":                         "Params.NumGroups",
	"alphamoe_params.topk_groups":                        "Params.TopkGroups",
	"alphamoe_params.routed_scaling_factor":              "Params.RoutedScalingFactor",
	"alphamoe_params.local_expert_begin":                 "Params.LocalExpertBegin",
	"alphamoe_params.local_expert_count":                 "Params.LocalExpertCount",
	"alphamoe_params.reserved":                           "",
	"alphamoe_params.vocab_size":                         "Params.VocabSize",
	"alphamoe_params.num_physical_experts":               "Params.NumPhysicalExperts",
	"alphamoe_params.replica_slots":                      "Params.ReplicaSlots",
	"alphamoe_params.reserved2":                          "",
	"alphamoe_extent.elements":                           "",
	"alphamoe_extent.bytes":                              "",
	"alphamoe_sizes.struct_size":                         "",
	"alphamoe_sizes.topk_ids":                            "Sizes.TopkIDs",
	"alphamoe_sizes.topk_weights":                        "Sizes.TopkWeights",
	"alphamoe_sizes.sorted_token_ids":                    "Sizes.SortedTokenIDs",
	"alphamoe_sizes.expert_ids":                          "Sizes.ExpertIDs",
	"alphamoe_sizes.num_tokens_post_padded":              "Sizes.NumTokensPostPadded",
	"alphamoe_sizes.expert_counts":                       "Sizes.ExpertCounts",
	"alphamoe_sizes.expert_offsets":                      "Sizes.ExpertOffsets",
	"alphamoe_sizes.pair_to_sorted":                      "Sizes.PairToSorted",
	"alphamoe_sizes.workspace":                           "Sizes.WorkspaceBytes",
	"alphamoe_sizes.workspace_alignment":                 "Sizes.WorkspaceAlignment",
	"alphamoe_buffers.struct_size":                       "",
	"alphamoe_buffers.topk_ids":                          "DeviceBuffers.TopkIDs",
	"alphamoe_buffers.topk_weights":                      "DeviceBuffers.TopkWeights",
	"alphamoe_buffers.sorted_token_ids":                  "DeviceBuffers.SortedTokenIDs",
	"alphamoe_buffers.expert_ids":                        "DeviceBuffers.ExpertIDs",
	"alphamoe_buffers.num_tokens_post_padded":            "DeviceBuffers.NumTokensPostPadded",
	"alphamoe_buffers.expert_counts":                     "DeviceBuffers.ExpertCounts",
	"alphamoe_buffers.expert_offsets":                    "DeviceBuffers.ExpertOffsets",
	"alphamoe_buffers.pair_to_sorted":                    "DeviceBuffers.PairToSorted",
	"alphamoe_buffers.sorted_token_ids_capacity":         "DeviceBuffers.SortedTokenIDsCapacity",
	"alphamoe_buffers.expert_ids_capacity":               "DeviceBuffers.ExpertIDsCapacity",
	"alphamoe_buffers.workspace":                         "DeviceBuffers.Workspace",
	"alphamoe_buffers.workspace_bytes":                   "DeviceBuffers.WorkspaceBytes",
	"alphamoe_buffers.correction_bias":                   "DeviceBuffers.CorrectionBias",
	"alphamoe_buffers.expert_map":                        "DeviceBuffers.ExpertMap",
	"alphamoe_buffers.token_ids":                         "DeviceBuffers.TokenIDs",
	"alphamoe_buffers.hash_table":                        "DeviceBuffers.HashTable",
	"alphamoe_buffers.logical_to_physical":               "DeviceBuffers.LogicalToPhysical",
	"alphamoe_buffers.replica_count":                     "DeviceBuffers.ReplicaCount",
	"alphamoe_buffers.physical_load":                     "DeviceBuffers.PhysicalLoad",
	"alphamoe_device_attributes.struct_size":             "",
	"alphamoe_device_attributes.compute_capability":      "DeviceAttributes.ComputeCapability",
	"alphamoe_device_attributes.multiprocessor_count":    "DeviceAttributes.MultiprocessorCount",
	"alphamoe_device_attributes.cooperative_ctas_per_sm": "DeviceAttributes.CooperativeCTAsPerSM",
	"alphamoe_device_attributes.cooperative_launch":      "DeviceAttributes.CooperativeLaunch",
	"alphamoe_device_attributes.max_cluster_ctas":        "DeviceAttributes.MaxClusterCTAs",
	"alphamoe_selection.struct_size":                     "",
	"alphamoe_selection.specialization":                  "Selection.Specialization",
	"alphamoe_selection.grid_ctas":                       "Selection.GridCTAs",
	"alphamoe_selection.block_threads":                   "Selection.BlockThreads",
	"alphamoe_selection.cooperative":                     "Selection.Cooperative",
	"alphamoe_selection.image_arch":                      "Selection.ImageArch",
	"alphamoe_selection.tokens_per_cta":                  "Selection.TokensPerCTA",
	"alphamoe_selection.cluster_ctas":                    "Selection.ClusterCTAs",
	"alphamoe_selection.kernel_index":                    "Selection.KernelIndex",
	"alphamoe_selection.entry_point_index":               "Selection.EntryPointIndex",
}

// functions: every C function with the Go function or method that calls it.
var functions = map[string]any{
	"alphamoe_status_string":           router.Status.Message,
	"alphamoe_version_number":          router.VersionNumber,
	"alphamoe_version_string":          router.Version,
	"alphamoe_router_create":           router.New,
	"alphamoe_router_destroy":          (*router.Router).Close,
	"alphamoe_router_get_params":       router.New,
	"alphamoe_router_sizes":            router.New,
	"alphamoe_route":                   (*router.Router).Route,
	"alphamoe_route_host":              (*router.Router).RouteHostWith,
	"alphamoe_device_count":            router.DeviceCount,
	"alphamoe_device_describe":         router.DescribeDevice,
	"alphamoe_device_attributes_query": router.QueryDeviceAttributes,
	"alphamoe_specialization_name":     router.Specialization.String,
	"alphamoe_router_select":           (*router.Router).Select,
	"alphamoe_router_candidates":       (*router.Router).Candidates,
	"alphamoe_route_with_plan":         (*router.Router).RouteWithPlan,
	"alphamoe_kernel_count":            router.KernelCount,
	"alphamoe_entry_point_count":       router.EntryPointNames,
	"alphamoe_kernel_name":             router.KernelNames,
	"alphamoe_entry_point_name":        router.EntryPointNames,
	"alphamoe_kernel_images":           router.KernelImages,
}

var goTypes = map[string]reflect.Type{
	"Params":           reflect.TypeOf(router.Params{}),
	"Sizes":            reflect.TypeOf(router.Sizes{}),
	"DeviceBuffers":    reflect.TypeOf(router.DeviceBuffers{}),
	"DeviceAttributes": reflect.TypeOf(router.DeviceAttributes{}),
	"Selection":        reflect.TypeOf(router.Selection{}),
}

// sameKeys reports the names only one side has.
func sameKeys[V any, W any](t *testing.T, what string, header map[string]V, mirror map[string]W) {
	t.Helper()
	var missing, extra []string
	for name := range header {
		if _, ok := mirror[name]; !ok {
			missing = append(missing, name)
		}
	}
	for name := range mirror {
		if _, ok := header[name]; !ok {
			extra = append(extra, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("%s: in the header but not mirrored %v; mirrored but not in the header %v", what, missing, extra)
	}
}

func TestConstantsAreTheHeaders(t *testing.T) {
	f := readHeaderFacts(t)
	header := map[string]int64{}
	for typ, values := range f.enums {
		if typ == "alphamoe_status" {
			continue
		}
		for name, v := range values {
			header[name] = v
		}
	}
	for name, v := range f.defines {
		header[name] = v
	}
	sameKeys(t, "constants", header, constants)
	for name, v := range header {
		if got, ok := constants[name]; ok && got != v {
			t.Errorf("%s = %d in the header, %d here", name, v, got)
		}
	}
}

func TestStatusesAreTheHeaders(t *testing.T) {
	header := readHeaderFacts(t).enums["alphamoe_status"]
	sameKeys(t, "statuses", header, statuses)
	for name, v := range header {
		s, ok := statuses[name]
		if !ok {
			continue
		}
		if int64(s.status) != v || s.status.String() != name {
			t.Errorf("%s = %d in the header; here %d named %q", name, v, s.status, s.status.String())
		}
		if !strings.HasPrefix(s.status.Message(), name+": ") {
			t.Errorf("%s: the library says %q", name, s.status.Message())
		}
		if v == 0 {
			continue
		}
		var e *router.Error
		err := error(&router.Error{Status: s.status, Message: "from a call"})
		if !errors.Is(err, s.sentinel) || !errors.As(s.sentinel, &e) || e.Status != s.status || e.Message != s.status.Message() {
			t.Errorf("%s: the sentinel %v does not match an error of its status", name, s.sentinel)
		}
	}
	if got := router.Status(1000).String(); got != "Status(1000)" {
		t.Errorf("an unknown status prints %q", got)
	}
}

func TestFieldsAreMirrored(t *testing.T) {
	header := readHeaderFacts(t).fields
	sameKeys(t, "struct fields", header, fields)
	for cField, goField := range fields {
		if goField == "" {
			continue
		}
		typ, field, _ := strings.Cut(goField, ".")
		if _, ok := goTypes[typ].FieldByName(field); !ok {
			t.Errorf("%s: no field %s", cField, goField)
		}
	}
}

func TestFunctionsAreMirrored(t *testing.T) {
	sameKeys(t, "functions", readHeaderFacts(t).functions, functions)
}
