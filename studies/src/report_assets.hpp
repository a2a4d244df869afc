// What every report page inlines, embedded into the binary at build time by studies/report/embed_assets.cmake (the
// generated report_assets.cpp in the build folder): the chart library's minified build from the npm package that
// studies/report/package-lock.json pins, the page's own script and style, and the third-party notice.
#pragma once

#include <string_view>

namespace railyard::studies::report_assets {

extern const std::string_view chart_library;         ///< echarts/dist/echarts.min.js
extern const std::string_view chart_library_name;    ///< "echarts"
extern const std::string_view chart_library_version; ///< the installed package's version, e.g. "6.1.0"
extern const std::string_view page_script;           ///< studies/report/report.js
extern const std::string_view page_style;            ///< studies/report/report.css
extern const std::string_view notice;                ///< studies/report/NOTICE

} // namespace railyard::studies::report_assets
