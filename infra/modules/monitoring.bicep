// Logs (the Container Apps environment's) and traces: the roles switch Azure Monitor on
// when APPLICATIONINSIGHTS_CONNECTION_STRING is set.
param workspaceName string
param appInsightsName string
param location string
param tags object

resource workspace 'Microsoft.OperationalInsights/workspaces@2025-02-01' = {
  name: workspaceName
  location: location
  tags: tags
  properties: {
    sku: { name: 'PerGB2018' }
    retentionInDays: 30
  }
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: appInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: workspace.id
  }
}

// Names only: whoever needs a key or connection string reads it from the resource.
output workspaceName string = workspace.name
output appInsightsName string = appInsights.name
