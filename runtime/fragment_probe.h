// Measuring where the device keeps fragments' elements (codegen/fragment_layout.h), once per
// device when it opens.
#pragma once

#include <vector>

#include "runtime/device_impl.h"

namespace nxv::runtime {

// The device's fragment shapes with the layouts measured of those codegen::probes_layout
// names; a shape whose probe fails or reads back no layout stays unmeasured.
std::vector<codegen::CooperativeMatrixShape> probe_fragment_layouts(DeviceImpl& device);

}  // namespace nxv::runtime
